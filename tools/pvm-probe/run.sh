#!/usr/bin/env bash
# Builds and runs the PVM probe (needs gcc, binutils and read-write /dev/kvm). See docs/pvm.md.
set -euo pipefail
cd "$(dirname "$0")"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
as guest.S -o "$out/guest.o"
objcopy -O binary "$out/guest.o" "$out/guest.bin"
gcc -O2 -Wall -Wextra -o "$out/probe" probe.c
cd "$out" && ./probe
