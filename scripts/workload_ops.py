#!/usr/bin/env python3
"""Prints the GPU runner's --op argument of each op of a workload YAML, one per line (its fields, its index,
which fixes its input tensor ids, and the workload's seed); with op names after the file, only those.

usage: workload_ops.py configs/workloads/resnet50.yaml [OP ...]
"""
import sys

import yaml


def main():
    workload = yaml.safe_load(open(sys.argv[1]))
    wanted = set(sys.argv[2:])
    for index, op in enumerate(workload["ops"]):
        if wanted and op["name"] not in wanted:
            continue
        fields = {"kind": op["kind"], "name": op["name"], "index": index, "seed": workload["seed"]}
        for key, value in op.items():
            if key in ("kind", "name"):
                continue
            if isinstance(value, dict):  # a group of fields: kv_cache: {layout: paged} -> kv_cache.layout=paged
                fields.update({f"{key}.{inner}": element for inner, element in value.items()})
            else:
                fields[key] = value
        print(",".join(f"{key}={text(value)}" for key, value in fields.items()))


def text(value):
    """A field as tessera's op text writes it: lists joined by '+', booleans in lower case."""
    if isinstance(value, list):
        return "+".join(text(element) for element in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


if __name__ == "__main__":
    main()
