#!/usr/bin/python3
"""report.json's JSON Schema (docs/report.schema.json), written from this description, and the check of reports
against it.

  scripts/report_schema.py write               writes docs/report.schema.json
  scripts/report_schema.py check REPORT...     checks that docs/report.schema.json is what this script writes,
                                               then validates each report against it (exit 1 on any error)

Each row's `mapping` is one form's own fields (issue "forms in family rooms", item 6): a contraction's cores,
tile, loop order, buffering and multicast; a vector stage's rows and blocks; an attention form's Q blocks and
K/V tiles; an MoE placement's tiles — and nothing else (additionalProperties false), so a row carrying another
family's keys fails. Uses Debian's python3-jsonschema (Draft 2020-12).
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / "docs" / "report.schema.json"

INT = {"type": "integer"}
NONNEG = {"type": "integer", "minimum": 0}
POS = {"type": "integer", "minimum": 1}
NUM = {"type": "number"}
NONNEGNUM = {"type": "number", "minimum": 0}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
# a float the report may write as "inf" or "nan" (an error that is not finite)
ERR = {"oneOf": [NONNEGNUM, {"enum": ["inf", "nan"]}]}

def obj(props, required=None, extra=False, desc=None):
    o = {"type": "object", "properties": props,
         "required": sorted(props) if required is None else required,
         "additionalProperties": extra}
    if desc: o["description"] = desc
    return o

causes = {"type": "object", "additionalProperties": NONNEG,
          "description": "cycles per bubble cause (the report's bubble_causes), summing to the run's cycles"}

def mapping(form_schema, props, required_extra=(), desc=None):
    p = {"dataflow": STR, "form": form_schema, "description": STR}
    p.update(props)
    return obj(p, required=sorted(["dataflow", "form", "description", *[k for k in props if k not in required_extra]]), desc=desc)

contraction = mapping({"const": "contraction"}, {
    "stage": {"enum": ["gemm", "direct_conv"]},
    "cores": obj({"m": POS, "n": POS, "k": POS}),
    "tile": obj({"m": POS, "n": POS, "k": POS}),
    "loop_order": {"type": "string", "pattern": "^[mnk]{3}$"},
    "double_buffer": obj({"inputs": BOOL, "output": BOOL}),
    "multicast": obj({"A": BOOL, "W": BOOL}),
    "edge_waste": {"type": "number", "minimum": 0, "maximum": 1},
}, desc="a contraction stage's mapping: cores and SRAM tile along m, n, k, loop order, buffering, multicast operands and the PE slots ragged edge folds leave idle")
vector = mapping({"const": "vector"}, {
    "cores": POS, "rows_per_core": POS, "block_rows": POS, "double_buffer": BOOL,
    "residual": {"enum": ["fused", "unfused"]},
}, required_extra=("residual",), desc="a vector stage's mapping: its rows split over cores, streamed in blocks")
attention = mapping({"enum": ["flash", "flash-mc", "flash-split", "naive"]}, {
    "cores": POS, "q_block_rows": POS, "kv_tile_keys": POS,
    "kv_buffers": POS, "multicast": {"const": True}, "kv_splits": POS, "softmax_rows": POS,
}, required_extra=("kv_buffers", "multicast", "kv_splits", "softmax_rows"),
   desc="an attention form's mapping: Q blocks of rows over cores, K/V tiles of keys; flash-mc its K/V buffers, flash-split its splits, naive its softmax rows")
attention["allOf"] = [
    {"if": {"properties": {"form": {"const": "flash-mc"}}}, "then": {"required": ["kv_buffers", "multicast"]}},
    {"if": {"properties": {"form": {"const": "flash-split"}}}, "then": {"required": ["kv_splits"]}},
    {"if": {"properties": {"form": {"const": "naive"}}}, "then": {"required": ["softmax_rows"]}},
]
moe_tile = {"type": "object", "properties": {"m": POS, "n": POS, "k": POS}, "required": ["n", "k"],
            "additionalProperties": False}
moe = mapping({"enum": ["ep", "ep-split", "ep-a2a"]}, {
    "placement": {"enum": ["whole experts", "split experts", "all-to-all"]},
    "tile": moe_tile, "routing_seed": NONNEG, "router_block_rows": POS,
    "combine_block": obj({"rows": POS, "cols": POS}),
}, required_extra=("routing_seed", "router_block_rows", "combine_block"),
   desc="an MoE placement's mapping: where the experts run and their GEMM tiles")
moe["allOf"] = [
    {"if": {"properties": {"form": {"const": "ep-a2a"}}},
     "then": {"required": ["routing_seed"]},
     "else": {"required": ["router_block_rows", "combine_block"]}},
]

program = obj({"dataflow": {"const": "program"}, "form": {"const": "program"}, "description": STR},
              desc="tessera sim: a program as written, which no form mapped")

numerics = obj({"reference": {"enum": ["cpu", "gpu-recorded", "gpu-live"]}, "max_abs_err": ERR, "rel_l2_err": ERR,
                "tolerance": {"oneOf": [NONNEGNUM, {"const": "exact"}]}, "pass": BOOL})
core_load = obj({"straggler": STR, "imbalance_cycles": NONNEG,
                 "cores": {"type": "array", "items": obj({"core": STR, "pe_busy_cycles": NONNEG, "done_cycles": NONNEG})}})
stats = {
    "cycles": NONNEG, "time_us": NONNEGNUM, "macs": NONNEG, "pe_macs": NONNEG, "active_pes": NONNEG,
    "pe_utilization": NONNEGNUM, "dram_bytes": NONNEG, "dram_gbps": NONNEGNUM, "sram_read_bytes": NONNEG,
    "sram_write_bytes": NONNEG, "noc_bytes": NONNEG, "noc_byte_hops": NONNEG, "energy_uj": NONNEGNUM,
    "analytical_cycles": NONNEG,
    "analytical_bound": {"enum": ["compute", "dram", "dma", "noc", "sram", "vector", ""],
                         "description": "empty where no form estimated it (tessera sim of a program as written)"},
    "instructions": NONNEG, "sram_hazards": NONNEG, "candidates_simulated": NONNEG, "candidates_stopped": NONNEG,
}
run_props = {"dataflow": STR, "winner": BOOL, **stats,
             "fusion": {"enum": ["fused", "unfused", "array", ""],
                        "description": "an epilogue's: fused, unfused or in the PE array; empty for an op without one"},
             "mapping": {"oneOf": [contraction, vector, attention, moe, program]},
             "numerics": {"type": "array", "items": numerics},
             "bubbles_by_kind": {"type": "object", "additionalProperties": causes},
             "bubbles": {"type": "object", "additionalProperties": causes},
             "unit_counters": {"type": "object", "additionalProperties": {
                 "type": "object", "propertyNames": {"pattern": "^[a-z_]+$"}, "additionalProperties": NONNEG},
                 "description": "per unit, the simulator's counters that are not 0, as common/counters.hpp "
                                "declares them (instructions, macs, folds, active_pes, bytes_moved, bursts, "
                                "vector_elements): a counter added there needs no change here"},
             "core_load": core_load, "program": STR, "loses_because": STR}
run = obj(run_props, required=sorted(["dataflow", "winner", *stats, "fusion", "mapping", "numerics", "bubbles_by_kind", "bubbles",
                                      "unit_counters"]),
          desc="one simulated mapping of an op: a row of the table; its figures are the simulator's counters "
               "(common/counters.hpp) and those derived from them (traces/run_stats.cpp)")
side = obj({"dataflow": STR, "cycles": NONNEG, "dram_bytes": NONNEG, "sram_bytes": NONNEG})
fusion = obj({"fused": side, "unfused": side, "array": side, "winner": {"enum": ["fused", "unfused", "array"]},
              "unfused_vs_fused_cycles": NONNEGNUM}, required=["fused", "unfused", "winner", "unfused_vs_fused_cycles"])
position = obj({"flop_per_byte": NONNEGNUM, "attained_tflops": NONNEGNUM, "roof_tflops": NONNEGNUM, "bound": STR}, extra=True)
gpu = {"type": "object", "required": ["gpu", "record", "date", "compared"],
       "properties": {"gpu": STR, "record": STR, "date": STR, "compared": BOOL, "note": STR, "contraction_only": BOOL,
                      "path": STR, "time_us": NONNEGNUM, "tflops": NONNEGNUM, "roofline_floor_us": NONNEGNUM,
                      "roofline_bound": STR, "eager_us": NONNEGNUM, "framework": {"type": "object"},
                      "profile": {"type": "object"}, "vs_simulated": {"type": "object"}},
       "additionalProperties": False,
       "description": "a recorded GPU run of the same op (traces/reference/)"}
op = obj({"name": STR, "kind": STR, "shape": STR, "dtype": STR, "macs": NONNEG, "dram_minimum_bytes": NONNEG,
          "mapper": obj({"candidates": NONNEG, "host_seconds": NONNEGNUM}, required=["candidates"]),
          "winner": {"type": ["string", "null"]}, "not_simulated": STR,
          "pruned": {"type": "array", "items": obj({"dataflow": STR, "estimate_vs_best": NONNEGNUM})},
          "pareto": {"type": "array", "items": obj({"dataflow": STR, "analytical_cycles": NONNEG, "energy_uj": NONNEGNUM,
                                                     "dram_bytes": NONNEG, "mapping": STR})},
          "runs": {"type": "array", "items": run},
          "fusion": fusion,
          "gpu_reference": {"type": "array", "items": gpu}, "gpu_reference_note": STR},
         required=sorted(["name", "kind", "shape", "dtype", "macs", "dram_minimum_bytes", "mapper", "winner",
                          "pruned", "pareto", "runs", "gpu_reference"]))
schema = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://tessera.example/report.schema.json",
    "title": "tessera report.json",
    "description": "What `tessera run` and `tessera sim` write as report.json and print with --format json "
                   "(docs/reading-a-report.md). schema_version changes when a key is removed or changes meaning; "
                   "keys may be added within a version.",
    **obj({"tool": {"const": "tessera"}, "schema_version": {"const": 1}, "command": {"enum": ["run", "sim"]},
           "machine": STR, "workload": STR, "clock_ghz": {"type": "number", "exclusiveMinimum": 0},
           "timing_only": BOOL, "objective": STR,
           "bubble_causes": {"type": "array", "items": STR},
           "ops": {"type": "array", "items": op},
           "totals": obj({"cycles": NONNEG, "time_us": NONNEGNUM, "macs": NONNEG, "dram_bytes": NONNEG,
                          "energy_uj": NONNEGNUM, "numerics_pass": BOOL}),
           "host_seconds": NONNEGNUM},
          required=sorted(["tool", "schema_version", "command", "machine", "workload", "clock_ghz", "timing_only",
                           "objective", "bubble_causes", "ops", "totals"])),
}

def text():
    return json.dumps(schema, indent=2) + "\n"


def reason(error):
    """The error's message; for a mapping that is no form's, what is wrong with it as the form it names."""
    if error.validator != "oneOf" or not error.context:
        return error.message[:400]
    branches = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    named = [subs for subs in branches.values() if not any(list(s.relative_path) == ["form"] for s in subs)]
    if len(named) == 1:
        return "as its form: " + "; ".join(s.message[:300] for s in named[0])
    return error.message[:400]


def main(argv):
    if len(argv) >= 2 and argv[1] == "write":
        SCHEMA_FILE.write_text(text())
        return 0
    if len(argv) < 3 or argv[1] != "check":
        print(__doc__, file=sys.stderr)
        return 2
    import jsonschema  # python3-jsonschema

    if SCHEMA_FILE.read_text() != text():
        print(f"{SCHEMA_FILE}: not what scripts/report_schema.py writes: run it with `write`", file=sys.stderr)
        return 1
    validator = jsonschema.Draft202012Validator(schema)
    validator.check_schema(schema)
    errors = 0
    for name in argv[2:]:
        report = json.loads(pathlib.Path(name).read_text())
        for error in sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path)):
            errors += 1
            where = "/".join(str(part) for part in error.absolute_path)
            print(f"{name}: {where}: {reason(error)}", file=sys.stderr)
    print(f"{len(argv) - 2} reports, {errors} schema errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
