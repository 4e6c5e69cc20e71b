/* Image resampling as Pillow does it: Image.resize(size, BICUBIC or LANCZOS) of an
   8-bit RGB image, bit-exact with Pillow 13 (libImaging/Resample.c: separable
   passes, horizontal first unless the height shrinks by more than twice
   what the width does (Pillow 12 and older: always horizontal first), each with coefficients scaled by the reduction
   factor (antialiasing), rounded to 22-bit fixed point, and an 8-bit clip
   after each pass). Vision preprocessors in transformers resize through
   PIL, so matching it bit for bit is what makes their patches match. */
#ifndef MLLM_IMAGE_RESAMPLE_H
#define MLLM_IMAGE_RESAMPLE_H
#include <mllm/mllm.h>
#include "image/image.h"

/* out gets a new out_w x out_h image (free with mllm_image_free). Errors:
   MLLM_ERR_INVALID_ARG (sizes under 1 or over MLLM_IMAGE_MAX_SIDE),
   MLLM_ERR_NOMEM. Equal sizes copy. */
mllm_status mllm_image_resize_bicubic(const mllm_image *in, int out_w, int out_h, mllm_image *out);
/* The same with Pillow's LANCZOS filter (support 3; Idefics3 / SmolVLM). */
mllm_status mllm_image_resize_lanczos(const mllm_image *in, int out_w, int out_h, mllm_image *out);

#endif
