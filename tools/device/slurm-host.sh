#!/usr/bin/env bash
# On a GPU host without Slurm (the device machines start bare and reach no package
# registry): install Debian's slurmctld, slurmd, slurm-client and munge from .deb files
# carried in .devdeps/slurm/, so that tools/slurm/local.sh can bring up a one-host Slurm
# there. Fetch them here, once, from the project root:
#   mkdir -p .devdeps/slurm && (cd .devdeps/slurm && apt-get download slurmctld slurmd \
#     slurm-client slurm-wlm-basic-plugins munge libmunge2 libhwloc15 libnuma1 liblz4-1 \
#     libjson-c5 liblua5.1-0 libyaml-0-2 libudev1 libsystemd0 libzstd1 libgcrypt20 \
#     libgpg-error0 libpam0g libcap-ng0 libaudit1 libaudit-common libdbus-1-3 libcap2 \
#     libbz2-1.0 zlib1g liblzma5)
# (the libraries are what the daemons and the plugins local.sh uses link; the host keeps
# every file it already has: only missing files are added, so no library of the host is
# replaced by Debian's). Then, on the GPU host, as root:
#   tools/device/slurm-host.sh [DEBS]      (DEBS defaults to .devdeps/slurm)
# A host that already has slurmctld is left alone. ROOT (default /) installs elsewhere,
# for trying the script out.
set -euo pipefail
debs=${1:-$(cd "$(dirname "$0")/../.." && pwd)/.devdeps/slurm}
root=${ROOT:-/}
if [ "$root" = / ] && command -v slurmctld >/dev/null && command -v munged >/dev/null; then
  echo "slurm-host: slurmctld and munged are already installed"
  exit 0
fi
compgen -G "$debs/*.deb" >/dev/null || { echo "slurm-host: no .deb files in $debs (see this script's header)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in "$debs"/*.deb; do dpkg -x "$f" "$stage"; done
# Added where missing, never over the host's own files; a merged /usr's /lib -> usr/lib
# stays a link (--keep-directory-symlink).
tar -C "$stage" -cf - . | tar -C "$root" -xf - --skip-old-files --keep-directory-symlink
# Debian names the daemons slurmctld-wlm etc. and links the plain names through its
# alternatives, which dpkg -x does not run; slurmd starts slurmstepd by its plain name.
for b in slurmctld slurmd slurmstepd; do
  [ -e "$root/usr/sbin/$b" ] || ln -s "$b-wlm" "$root/usr/sbin/$b"
done
[ "$root" != / ] || ldconfig
# The one-host Slurm names its controller by the short host name, which must resolve.
host=$(hostname -s)
if [ "$root" = / ] && ! getent hosts "$host" >/dev/null; then
  echo "127.0.0.1 $host" >> /etc/hosts
fi
missing=0
for b in usr/sbin/slurmctld usr/sbin/slurmd usr/sbin/slurmstepd usr/sbin/munged usr/bin/sbatch; do
  if [ "$root" = / ] && ldd "/$b" | grep -q 'not found'; then
    echo "slurm-host: /$b lacks: $(ldd "/$b" | awk '/not found/ {print $1}' | tr '\n' ' ')" >&2
    missing=1
  fi
done
[ "$missing" -eq 0 ] || exit 1
echo "slurm-host: installed from $debs into $root"
