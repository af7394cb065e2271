#!/bin/sh
# Builds the sandbox's file system and starts the command in it. Runs as root of fresh mount,
# PID, network, IPC and UTS namespaces (util-linux `unshare`, see runner/src/sandbox/): what
# the command can see is a tmpfs root holding only the paths named below, read-only unless
# named --rw; /proc shows only the sandbox's own processes; /tmp and /dev/shm are new and
# empty. Then the root is switched (pivot_root: the old one is detached, not merely hidden
# as with chroot), every capability dropped, no_new_privs set, the user changed where we were
# real root, resource limits set, and the command exec'd with the environment it was given.
#
#   enter.sh ROOT UID GID [--ro P]... [--rw P]... [--dev P]... [--link P TARGET]... -- CMD...
#
# ROOT is an empty folder to mount the tmpfs on; UID and GID are the user to become (- to
# stay: inside a user namespace we are already an unprivileged user outside it). Paths keep
# their host names inside, so the runner's paths need no translation.
set -eu

fail() {
  echo "evokernel sandbox: $*" >&2
  exit 97
}

[ "$#" -ge 4 ] || fail "usage: enter.sh ROOT UID GID [--ro P|--rw P|--dev P|--link P T]... -- CMD..."
root=$1 uid=$2 gid=$3
shift 3

mount -t tmpfs -o mode=0755,size=64m,nosuid,nodev evokernel-root "$root" || fail "cannot mount a tmpfs on $root"
mkdir -p "$root/proc" "$root/dev" "$root/tmp" "$root/etc" "$root/.old"

# A bind mount needs something of the same kind to mount on.
placeholder() { # SOURCE TARGET
  if [ -d "$1" ]; then
    mkdir -p "$2"
  else
    mkdir -p "$(dirname "$2")"
    : >"$2"
  fi
}

readonly_below() { # TARGET: it and every mount under it read-only
  for point in $(awk -v t="$1" '$5 == t || index($5, t "/") == 1 { print $5 }' /proc/self/mountinfo); do
    mount -o remount,bind,ro,nosuid,nodev "$point" 2>/dev/null ||
      mount -o remount,bind,ro,nosuid,nodev,noexec "$point" 2>/dev/null ||
      mount -o remount,bind,ro "$point" || return 1
  done
}

bind() { # MODE SOURCE
  [ -e "$2" ] || return 0
  target=$root$2
  if [ -L "$2" ] && [ "$1" != dev ]; then
    # a symlink (merged /usr: /bin -> usr/bin) is recreated, not followed
    mkdir -p "$(dirname "$target")"
    [ -e "$target" ] || [ -L "$target" ] || ln -s "$(readlink "$2")" "$target"
    return 0
  fi
  placeholder "$2" "$target"
  case $1 in
    # Recursive (the driver's libraries are often a mount of their own under /usr), every
    # mount in it read-only; noexec where the source has it (a user namespace may not lift a
    # flag it inherited). /sys alone is not recursive: its debugfs and tracefs stay out. In a
    # user namespace made below another mount namespace (a local job's runner of its own uid),
    # the mounts under /sys are locked to it and a bind without them is refused: there it is
    # bound with them, read-only (what they hold is closed to an unprivileged user anyway).
    ro)
      if [ "$2" = /sys ]; then
        mount --bind "$2" "$target" 2>/dev/null || { [ "$uid" = - ] && mount --rbind "$2" "$target"; }
      else mount --rbind "$2" "$target"; fi &&
        readonly_below "$target"
      ;;
    rw) mount --bind "$2" "$target" && { mount -o remount,bind,nosuid,nodev "$target" 2>/dev/null ||
      mount -o remount,bind,nosuid,nodev,noexec "$target"; } ;;
    dev) mount --bind "$2" "$target" && mount -o remount,bind,nosuid "$target" ;;
  esac || fail "cannot bind $2 ($1)"
}

mount -t tmpfs -o mode=0755,size=1m,nosuid evokernel-dev "$root/dev"
# A new /tmp before the binds: the scratch folder usually lives under the host's /tmp. Half
# the machine's memory at most, the kernel's own default (a tmpfs takes memory only as it is
# written): the judge's copies of a trial's outputs live here, and KernelBench's level-1 tasks
# have 6 GiB outputs (8 GiB was too small for a ReLU's trial and its refill on the H100).
mount -t tmpfs -o mode=1777,size=50%,nosuid,nodev evokernel-tmp "$root/tmp"
while [ "$#" -gt 0 ]; do
  case $1 in
    --ro | --rw | --dev)
      [ "$#" -ge 2 ] || fail "$1 needs a path"
      bind "${1#--}" "$2"
      shift 2
      ;;
    --link)
      [ "$#" -ge 3 ] || fail "--link needs a path and a target"
      mkdir -p "$(dirname "$root$2")"
      ln -sfn "$3" "$root$2"
      shift 3
      ;;
    --)
      shift
      break
      ;;
    *) fail "unknown argument $1" ;;
  esac
done
[ "$#" -gt 0 ] || fail "no command"

mount -t proc -o nosuid,nodev,noexec proc "$root/proc" || fail "cannot mount /proc"
mkdir -p "$root/dev/shm"
mount -t tmpfs -o mode=1777,size=2g,nosuid,nodev evokernel-shm "$root/dev/shm"
for fd in stdin:0 stdout:1 stderr:2; do ln -s "/proc/self/fd/${fd#*:}" "$root/dev/${fd%%:*}"; done
ln -s /proc/self/fd "$root/dev/fd"

# Who we are inside: getpass and friends look the user up.
me=${uid#-}
[ "$uid" = - ] && me=$(id -u) && gid=$(id -g)
printf 'root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nevokernel:x:%s:%s:evokernel sandbox:/tmp:/usr/sbin/nologin\n' "$me" "$gid" >"$root/etc/passwd"
printf 'root:x:0:\nevokernel:x:%s:\n' "$gid" >"$root/etc/group"
printf 'hosts: files\npasswd: files\ngroup: files\n' >"$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
mount -o remount,ro,bind "$root" 2>/dev/null || mount -o remount,ro "$root" || fail "cannot make the root read-only"

cd "$root"
pivot_root . .old || fail "pivot_root failed"
cd /
umount -l /.old || fail "cannot detach the old root"

if [ "$uid" = - ]; then
  user=""
else
  user="--reuid=$uid --regid=$gid --clear-groups"
fi
# Limits first (lowering needs no privilege), then the user and the capabilities go. The
# process count and file size are sized from the machine by runner/src/sandbox/sandbox.ts
# (sandboxLimits: EVOKERNEL_SANDBOX_NPROC and EVOKERNEL_SANDBOX_FSIZE win), which always sets
# both; the harness inside names them when one is hit (evokernel_harness/limits.py).
case ${EVOKERNEL_SANDBOX_NPROC:-}:${EVOKERNEL_SANDBOX_FSIZE:-} in
  *[!0-9:]* | :* | *:) fail "EVOKERNEL_SANDBOX_NPROC and EVOKERNEL_SANDBOX_FSIZE must be numbers (runner/src/sandbox/sandbox.ts sets them)" ;;
esac
# shellcheck disable=SC2086 # $user is a list of options
exec prlimit --core=0 --nproc="$EVOKERNEL_SANDBOX_NPROC" --fsize="$EVOKERNEL_SANDBOX_FSIZE" -- \
  setpriv $user --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
