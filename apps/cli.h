/* The mllm command-line tool: one binary, one file per sub-command. */
#ifndef MLLM_APPS_CLI_H
#define MLLM_APPS_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <mllm/mllm.h>

int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Option parsing helpers: each returns false (after printing why) on a bad
   or missing value. */
bool cli_int(const char *opt, const char *val, long lo, long hi, long *out);
bool cli_float(const char *opt, const char *val, double lo, double hi, double *out);
/* The value after argv[*i], advancing *i; prints an error if missing. */
const char *cli_value(int argc, char **argv, int *i);
/* The whole file, NUL-terminated (malloc'd; *len may be NULL); NULL after
   printing why. */
char *cli_read_file(const char *path, size_t *len);
/* Prints "mllm: <what>: <status> (<detail>)" to stderr, returns 1. */
int cli_fail(const char *what, mllm_status st);

#endif
