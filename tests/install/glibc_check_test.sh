#!/usr/bin/env bash
# scripts/check-glibc-symbols.sh against this build: libpipescope.so built here (Debian 12) loads
# on its own glibc and is refused for 2.28 with the symbols that need newer; the command is
# refused for the libraries it needs beyond glibc.
#   tests/install/glibc_check_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
check=$2/scripts/check-glibc-symbols.sh
lib=$build/profiler/inject/libpipescope.so
fail() { echo "glibc check test: $*" >&2; exit 1; }

own=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
"$check" "$lib" "$own" | grep -q "loads on glibc $own and newer" || fail "refused on its own glibc $own"
if err=$("$check" "$lib" 2.28 2>&1); then fail "accepted for glibc 2.28: $err"; fi
[[ $err == *"needs glibc newer than 2.28: "*"@GLIBC_$own"* ]] || fail "the refusal names no GLIBC_$own symbol: $err"
if err=$("$check" "$build/cli/pipescope" 9.99 2>&1); then fail "accepted the command's libraries"; fi
[[ $err == *"needs libraries beyond glibc: "*libstdc++* ]] || fail "the refusal does not name libstdc++: $err"
echo "glibc-check-ok"
