#!/usr/bin/env bash
# Says whether a shared library loads on glibc VERSION and newer: every glibc symbol version it
# imports is VERSION or older, and it needs no library beyond glibc's own (libc, libm, libdl,
# libpthread, the loader). Exit 1 with the offending symbols or libraries otherwise.
#   scripts/check-glibc-symbols.sh LIBRARY VERSION
set -euo pipefail
lib=${1:?usage: scripts/check-glibc-symbols.sh LIBRARY VERSION}
glibc=${2:?usage: scripts/check-glibc-symbols.sh LIBRARY VERSION}
[[ -r $lib ]] || { echo "check-glibc-symbols: cannot read $lib" >&2; exit 2; }

newest=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
if [[ -n $newest && $(printf '%s\n%s\n' "$newest" "$glibc" | sort -V | tail -1) != "$glibc" ]]; then
  newer=$(objdump -T "$lib" | grep -oE '\(GLIBC_[0-9.]+\) +[A-Za-z_0-9]+' | tr -d '()' |
    awk -v g="$glibc" '{ split(substr($1, 7), v, "."); split(g, w, ".");
      if (v[1] > w[1] || (v[1] == w[1] && v[2] + 0 > w[2] + 0)) printf "%s@%s ", $2, $1 }')
  echo "check-glibc-symbols: $lib needs glibc newer than $glibc: ${newer% }" >&2
  exit 1
fi
others=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
  grep -v -E '^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux-x86-64\.so\.2)$' || true)
if [[ -n $others ]]; then
  echo "check-glibc-symbols: $lib needs libraries beyond glibc: $(tr '\n' ' ' <<< "$others" | sed 's/ $//')" >&2
  exit 1
fi
echo "$lib: loads on glibc $glibc and newer (its newest glibc symbol is GLIBC_${newest:-none}) and needs no other library"
