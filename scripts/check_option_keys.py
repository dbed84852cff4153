#!/usr/bin/env python3
"""check_option_keys: every configuration key that C code reads by name (spec_get, spec_int, spec_bool,
spec_duration, spec_entry, spec_set with a string literal) must be one the configuration module knows: a flinklet
option of src/config/config_options.c's table, or a Flink key src/config/ names (its defaults, checks and aliases), or an
autoscaler option of src/autoscaler/as_options.c. A misspelt key would read as unset (0, false, NULL) without a word;
this check fails `make lint` instead, naming the file and line."""
import glob
import re
import sys

READ = re.compile(r'\bspec_(?:get|int|bool|duration|entry|set)\(\s*[^,()]+,\s*"([^"]+)"')
KEY = re.compile(r'"([a-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+)"')


def known_keys():
    keys = set()
    for path in glob.glob("src/config/*.c") + ["src/autoscaler/as_options.c"]:
        with open(path) as f:
            keys |= set(KEY.findall(f.read()))
    return keys


def main():
    known = known_keys()
    bad = []
    for path in sorted(glob.glob("src/*/*.c")):
        if path.startswith("src/config/"):
            continue  # the module that defines the keys
        with open(path) as f:
            for n, line in enumerate(f, 1):
                for key in READ.findall(line):
                    if key not in known:
                        bad.append(f"{path}:{n}: reads the key \"{key}\", which src/config/ does not know "
                                   "(misspelt? add it to the option table of src/config/config_options.c)")
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
