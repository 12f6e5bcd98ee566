#!/usr/bin/env bash
# Proves the README's two commands on a bare Debian 12, as a new user meets them: builds a `debootstrap
# --variant=minbase bookworm` root, carries in only this machine's apt sources and its locally added CA certificates
# (what a machine behind a corporate proxy needs) and the resolver configuration, clones this repository's committed
# HEAD into it, and runs `./scripts/demo.sh` and then `./scripts/test.sh` inside it exactly as written, printing each
# one's exit status and wall time (and the test command's CTest summary). Everything it mounted is unmounted and
# every process left running inside the root is killed, whatever happens; the root is removed unless --keep.
# Takes about 30-60 minutes and ~8 GB of disk. Not part of CI; run it before a change to set-up, build or test
# dependencies lands, and record its figures in docs/testing.md.
# --demo-only runs the demo command alone (about 15 minutes): enough when a change adds a library the build links but
# not the tests' set-up.
# Usage: scripts/fresh-check.sh [--keep] [--demo-only] [WORK_DIR]   (as root; WORK_DIR default: a new folder under
# /var/tmp)
# Exit status: 0 both commands passed; 1 one failed; 2 the root could not be built.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
keep=0
demo_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1; shift ;;
    --demo-only) demo_only=1; shift ;;
    *) break ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh-check: run as root (debootstrap and chroot need it)" >&2; exit 2; }
work="${1:-$(mktemp -d /var/tmp/fresh-check.XXXXXX)}"
root="$work/root"
mkdir -p "$work"
"$repo/scripts/setup.sh" debootstrap

# The Debian mirror this machine's own apt uses (deb822 .sources or one-line .list), for debootstrap.
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2; exit}')
[ -n "$mirror" ] || mirror=$(grep -hE '^deb +(\[[^]]*\] +)?[a-z]+://' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
  2>/dev/null | sed -E 's/^deb +(\[[^]]*\] +)?//' | awk '{print $1; exit}')
mirror="${mirror:-http://deb.debian.org/debian}"

mounted=()
cleanup() {
  set +e
  # Processes whose root is the new root: anything the commands left running.
  for proc in /proc/[0-9]*; do
    [ "$(readlink "$proc/root" 2>/dev/null)" = "$root" ] && kill -9 "${proc#/proc/}" 2>/dev/null
  done
  sleep 1
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"
  done
  if ((keep)); then
    echo "fresh-check: root kept in $root"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

echo "fresh-check: debootstrap --variant=minbase bookworm $root $mirror"
start=$(date +%s)
# The downloaded .debs are kept between runs (only the download is saved: the root is unpacked anew each time).
cache=/var/cache/fresh-check/debootstrap
mkdir -p "$cache"
if ! debootstrap --variant=minbase --cache-dir="$cache" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  echo "fresh-check: debootstrap failed (log above)" >&2
  exit 2
fi
echo "fresh-check: bare root ready in $(($(date +%s) - start)) s ($(chroot "$root" dpkg-query -W | wc -l) packages)"

# Carried in: apt sources (disabled files stay out; they replace the one debootstrap wrote), locally added CA
# certificates, the resolver.
rm -f "$root/etc/apt/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && cp "$f" "$root$f"
done
mkdir -p "$root/usr/local/share/ca-certificates"
cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

mount_in() {  # mount_in TARGET MOUNT-ARGS...
  local target="$root$1"
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}
mount_in /proc -t proc proc
mount_in /sys -t sysfs -o ro sysfs
mount_in /dev --bind /dev
mount_in /dev/pts -t devpts -o newinstance,ptmxmode=0666 devpts
mount_in /dev/shm -t tmpfs -o mode=1777 tmpfs
mount_in /tmp -t tmpfs -o mode=1777 tmpfs

git clone --quiet --no-local "$repo" "$root/root/code_interpreter"
echo "fresh-check: cloned $(git -C "$repo" rev-parse --short HEAD) into /root/code_interpreter"

status=0
run() {  # run NAME COMMAND: one README command in the root, as a new user's login shell would run it
  local name="$1" command="$2" begin rc
  begin=$(date +%s)
  set +e
  env -i HOME=/root TERM=dumb LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    chroot "$root" /bin/bash -c "cd /root/code_interpreter && $command" >"$work/$name.log" 2>&1
  rc=$?
  set -e
  local seconds=$(($(date +%s) - begin))
  printf 'fresh-check: %s: exit %d in %d min %02d s\n' "$command" "$rc" $((seconds / 60)) $((seconds % 60))
  if [ "$rc" -ne 0 ]; then
    status=1
    tail -n 40 "$work/$name.log" | sed 's/^/  | /'
  fi
  return 0
}
run demo ./scripts/demo.sh
tail -n 12 "$work/demo.log" | sed 's/^/  demo | /'
if [ "$demo_only" -eq 1 ]; then
  cp "$work/demo.log" /var/tmp/fresh-check-demo.log && echo "fresh-check: log kept as /var/tmp/fresh-check-demo.log"
  exit "$status"
fi
run test ./scripts/test.sh
grep -E 'tests passed|tests failed out of|^fuzz: ' "$work/test.log" | sed 's/^/  test | /'
cp "$work/demo.log" /var/tmp/fresh-check-demo.log && cp "$work/test.log" /var/tmp/fresh-check-test.log &&
  echo "fresh-check: logs kept as /var/tmp/fresh-check-demo.log and /var/tmp/fresh-check-test.log"
exit "$status"
