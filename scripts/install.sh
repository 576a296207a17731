#!/bin/sh
# Installs the spinmutex command, libspinmutex.so and the man pages under a prefix:
#   $PREFIX/bin/spinmutex, $PREFIX/lib/libspinmutex.so, $PREFIX/share/man/man1/*.1
# The command finds the library in ../lib relative to itself (or beside itself, or
# where SPINMUTEX_LIB says).
#
# usage: scripts/install.sh [--prefix DIR] [--from DIR] [--destdir DIR]
#   --prefix DIR   where to install (default $PREFIX, else /usr/local)
#   --from DIR     where the built files are (default target/release); build them
#                  first with `cargo build --release`
#   --destdir DIR  staging root prepended to the prefix (default $DESTDIR)
set -eu

prefix=${PREFIX:-/usr/local}
from=""
destdir=${DESTDIR:-}

usage() {
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a directory" >&2; exit 2; }; prefix=$2; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --from) [ $# -ge 2 ] || { echo "install.sh: --from needs a directory" >&2; exit 2; }; from=$2; shift 2 ;;
        --from=*) from=${1#--from=}; shift ;;
        --destdir) [ $# -ge 2 ] || { echo "install.sh: --destdir needs a directory" >&2; exit 2; }; destdir=$2; shift 2 ;;
        --destdir=*) destdir=${1#--destdir=}; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

# The repository root is the parent of this script's directory.
root=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$from" ] || from=$root/target/release

for f in spinmutex libspinmutex.so; do
    if [ ! -f "$from/$f" ]; then
        echo "install.sh: $from/$f is missing; run 'cargo build --release' first" >&2
        exit 1
    fi
done

bindir=$destdir$prefix/bin
libdir=$destdir$prefix/lib
mkdir -p "$bindir" "$libdir"
# Copy to a temporary name, then rename: a running program keeps its old file.
cp "$from/spinmutex" "$bindir/.spinmutex.tmp.$$"
chmod 755 "$bindir/.spinmutex.tmp.$$"
mv -f "$bindir/.spinmutex.tmp.$$" "$bindir/spinmutex"
cp "$from/libspinmutex.so" "$libdir/.libspinmutex.so.tmp.$$"
chmod 755 "$libdir/.libspinmutex.so.tmp.$$"
mv -f "$libdir/.libspinmutex.so.tmp.$$" "$libdir/libspinmutex.so"

# The man pages are checked in (docs/man, made by `spinmutex man --out docs/man`).
mandir=$destdir$prefix/share/man/man1
mkdir -p "$mandir"
for page in "$root"/docs/man/*.1; do
    [ -f "$page" ] || { echo "install.sh: no man pages in $root/docs/man" >&2; exit 1; }
    cp "$page" "$mandir/"
    chmod 644 "$mandir/$(basename "$page")"
done

echo "installed $bindir/spinmutex"
echo "installed $libdir/libspinmutex.so"
echo "installed the man pages in $mandir"
