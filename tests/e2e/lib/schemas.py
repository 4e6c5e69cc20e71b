"""JSON schemas the constrained-decoding tests compile: SCHEMAS must
compile and every text drawn from them (random or from a model) must
validate; HOSTILE must fail with a message that holds the given words."""

NODE = {"type": "object", "properties": {
    "value": {"type": "integer", "minimum": -100, "maximum": 100},
    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
    "required": ["value"], "additionalProperties": False}

SCHEMAS = {
    "person": {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "maxItems": 3}},
        "required": ["name", "age"]},
    "nested": {"type": "object", "properties": {"user": {"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 1},
        "address": {"type": "object", "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 12},
            "zip": {"type": "string", "minLength": 5, "maxLength": 5}},
            "required": ["city"], "additionalProperties": False}},
        "required": ["id", "address"]}}, "required": ["user"]},
    "numbers_2_to_4": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 4},
    "enums": {"type": "object", "properties": {
        "color": {"enum": ["red", "green", "blue"]}, "kind": {"const": "shape"},
        "sides": {"type": "integer", "enum": [3, 4, 5, 6, "x"]}},
        "required": ["color", "kind", "sides"]},
    "all_optional": {"type": "object", "properties": {
        "a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"type": "number", "minimum": 0}}},
    "any_of": {"anyOf": [{"type": "string", "maxLength": 8}, {"type": "integer", "minimum": -5, "maximum": 5},
                         {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}]},
    "one_of": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string", "maxLength": 5}},
         "required": ["kind", "y"]}]},
    "tree": {"$defs": {"node": NODE}, "$ref": "#/$defs/node"},
    "all_of": {"definitions": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
               "allOf": [{"$ref": "#/definitions/base"},
                         {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}},
                          "required": ["name"]}]},
    "formats": {"type": "object", "properties": {
        "d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "time"},
        "dt": {"type": "string", "format": "date-time"}, "u": {"type": "string", "format": "uuid"}},
        "required": ["d", "u", "dt", "t"]},
    "extra_any": {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"],
                  "additionalProperties": True},
    "extra_schema": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}},
    "type_list": {"type": ["string", "null"], "maxLength": 4},
    "int_ranges": {"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "integer", "minimum": -1234, "maximum": 56789}, "maxItems": 5},
        "b": {"type": "integer", "exclusiveMinimum": 10, "exclusiveMaximum": 20},
        "c": {"type": "integer", "minimum": 1000000},
        "d": {"type": "integer", "maximum": -50},
        "e": {"type": "integer", "minimum": -7}},
        "required": ["a", "b", "c", "d", "e"]},
    "json_object": {"type": "object"},
    "anything": {},
    "unicode": {"type": "object", "properties": {"名前": {"type": "string", "maxLength": 3},
                                                 "é\"q": {"enum": ["ü", "\n", None]}},
                "required": ["名前", "é\"q"]},
    "items_true": {"type": "array", "items": True, "maxItems": 3},
    "exact_length": {"type": "string", "minLength": 3, "maxLength": 3},
    "empty_array": {"type": "array", "maxItems": 0},
}


def deep(n):
    s = {"type": "integer"}
    for _ in range(n):
        s = {"type": "array", "items": s}
    return s


HOSTILE = [
    ("deep nesting", deep(40), "MLLM_JSG_MAX_DEPTH"),
    ("huge enum", {"enum": list(range(2000))}, "MLLM_JSG_MAX_ENUM"),
    ("ref to itself", {"$ref": "#"}, "cycle"),
    ("ref loop", {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "cycle"),
    ("left recursion", {"anyOf": [{"$ref": "#"}, {"type": "null"}]}, "left-recursive"),
    ("no finite instance", {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]}, "no finite"),
    ("giant minItems", {"type": "array", "minItems": 100000}, "MLLM_GRAMMAR_MAX_REPEAT"),
    ("giant maxLength", {"type": "string", "maxLength": 1e9}, "MLLM_GRAMMAR_MAX_REPEAT"),
    ("giant minimum", {"type": "integer", "minimum": 1e300}, "MLLM_JSG_MAX_INT"),
    ("many properties", {"type": "object", "properties": {"p%d" % i: {} for i in range(300)}},
     "MLLM_JSG_MAX_PROPERTIES"),
    ("pattern", {"type": "string", "pattern": "a+"}, "'pattern' is not supported"),
    ("format email", {"type": "string", "format": "email"}, "format 'email'"),
    ("remote ref", {"$ref": "http://example.com/s.json"}, "only local"),
    ("missing ref", {"$ref": "#/$defs/nope"}, "points to nothing"),
    ("number range", {"type": "number", "maximum": 3}, "type integer"),
    ("unique items", {"type": "array", "uniqueItems": True}, "uniqueItems"),
    ("empty range", {"type": "integer", "minimum": 5, "maximum": 4}, "no integer"),
]
