#!/usr/bin/env bash
# clang-tidy (the checked-in .clang-tidy) on the C++ files a change touched, its findings as errors.
# A header counts through the sources of the build that include it, so a changed header is checked
# where it is used, in at most a few of them.
#
#   scripts/tidy-changed.sh BUILD_DIR [BASE]
#
# BASE is a commit (default HEAD~1: the last commit, as CI checks it); uncommitted changes count
# too. BUILD_DIR must have compile_commands.json (the project's builds write it). In a clone
# without HEAD~1 (a shallow one) it says so and checks nothing; a BASE given that is not a commit
# is an error.
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: scripts/tidy-changed.sh BUILD_DIR [BASE]" >&2
  exit 2
fi
if [[ ! -d $1 ]]; then
  echo "tidy-changed: $1 is not a build directory" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
base=${2:-HEAD~1}
cd "$(dirname "${BASH_SOURCE[0]}")/.."

database=$build/compile_commands.json
if [[ ! -f $database ]]; then
  echo "tidy-changed: $database is missing; configure the build first" >&2
  exit 2
fi
if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  if [[ $# -eq 2 ]]; then
    echo "tidy-changed: $base is not a commit of this repository" >&2
    exit 2
  fi
  echo "tidy-changed: $base is not in this clone (shallow?); nothing to compare with, nothing checked"
  exit 0
fi

mapfile -t changed < <({ git diff --name-only --diff-filter=d "$base" -- '*.cpp' '*.h'; \
                         git ls-files --others --exclude-standard -- '*.cpp' '*.h'; } | sort -u)
# The sources the build compiles, as the database names them.
mapfile -t compiled < <(python3 -c '
import json, os, sys
for entry in json.load(open(sys.argv[1])):
    path = os.path.join(entry["directory"], entry["file"])
    print(os.path.relpath(os.path.realpath(path), os.getcwd()))' "$database" | sort -u)

declare -A in_build=()
for file in "${compiled[@]}"; do in_build[$file]=1; done
declare -A chosen=()
for file in "${changed[@]}"; do
  if [[ $file == *.cpp ]]; then
    [[ -n ${in_build[$file]:-} ]] && chosen[$file]=1
    continue
  fi
  # A header: two compiled sources that include it by name, its own component's first.
  name=$(basename "$file")
  component=$(echo "$file" | cut -d/ -f1-2)
  mapfile -t users < <({ git grep -l -F "/$name\"" -- '*.cpp'; git grep -l -F "#include \"$name\"" -- '*.cpp'; } |
                       sort -u | awk -v c="$component/" '{ print (index($0, c) == 1 ? 0 : 1) "\t" $0 }' |
                       sort -k1,1n -k2 | cut -f2)
  picked=0
  for user in "${users[@]}"; do
    if [[ -n ${in_build[$user]:-} && $picked -lt 2 ]]; then
      chosen[$user]=1
      picked=$((picked + 1))
    fi
  done
done

if [[ ${#chosen[@]} -eq 0 ]]; then
  echo "tidy-changed: no C++ source of this build changed since $base"
  exit 0
fi
echo "tidy-changed: since $base: $(printf '%s\n' "${!chosen[@]}" | sort | tr '\n' ' ')"
# The database without the options g++ takes and clang-tidy's clang refuses (the preload
# library's TLS dialect), which would fail every file that has them.
tidy_database=$(mktemp -d)
trap 'rm -rf "$tidy_database"' EXIT
python3 -c '
import json, sys
entries = json.load(open(sys.argv[1]))
for entry in entries:
    if "command" in entry:
        entry["command"] = entry["command"].replace(" -mtls-dialect=gnu2", "")
    if "arguments" in entry:
        entry["arguments"] = [a for a in entry["arguments"] if a != "-mtls-dialect=gnu2"]
json.dump(entries, open(sys.argv[2] + "/compile_commands.json", "w"))' "$database" "$tidy_database"
printf '%s\n' "${!chosen[@]}" | sort |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$tidy_database" --quiet --warnings-as-errors='*' 2>/dev/null
echo "tidy-changed: clean"
