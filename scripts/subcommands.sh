#!/bin/sh
# The sub-command names in cmd/main.c's table (one CMD("name", ...) a line).
sed -n 's/^[[:space:]]*CMD("\([a-z-]*\)".*/\1/p' "$(dirname "$0")/../cmd/main.c"
