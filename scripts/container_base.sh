#!/usr/bin/env bash
# Build (once) the base image the container tests give to `podman build --from`, with no image
# registry: a `debootstrap --variant=minbase bookworm` rootfs with python3, pip, venv and
# python-is-python3, this machine's CA bundle (pip inside the build reaches the package index
# through the same trust store as the host) and its pip configuration.
#
#   scripts/container_base.sh            prints the image name; builds it when podman lacks it
#   HOURGLASS_BASE_REBUILD=1 scripts/container_base.sh    throw the cached rootfs away first
#
# Cached between runs: the rootfs tarball in ~/.cache/hourglass/container/ and the image in
# podman's store. Needs root (debootstrap, podman) and deb.debian.org.
set -euo pipefail

IMAGE=${HOURGLASS_BASE_IMAGE:-localhost/hourglass-base:bookworm}
CACHE=${HOURGLASS_CONTAINER_CACHE:-$HOME/.cache/hourglass/container}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
TARBALL=$CACHE/bookworm-minbase-python.tar
RUNTIME=$(command -v runc)

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9   # two test processes building at once would race on the rootfs

if [ -n "${HOURGLASS_BASE_REBUILD:-}" ]; then
  rm -f "$TARBALL"
  podman --runtime "$RUNTIME" rmi -f "$IMAGE" >/dev/null 2>&1 || true
fi

if podman --runtime "$RUNTIME" image exists "$IMAGE"; then
  echo "$IMAGE"
  exit 0
fi

if [ ! -s "$TARBALL" ]; then
  root=""
  trap 'rm -rf "$root"' EXIT
  for attempt in 1 2; do  # once more on failure: a loaded host has failed a package's configure step
    rm -rf "$root"
    root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    echo "container_base: debootstrap bookworm into $root (attempt $attempt)" >&2
    if debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,python-is-python3,ca-certificates \
        bookworm "$root" "$MIRROR" >&2; then
      break
    fi
    tail -n 40 "$root/debootstrap/debootstrap.log" >&2 || true
    [ "$attempt" -eq 2 ] && exit 1
  done
  # this machine's trust store: pip behind a TLS-inspecting proxy only trusts it through these
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  # ... and its local CAs the Debian way, so a stage that installs a JRE (ca-certificates-java
  # builds Java's trust store from /etc/ssl/certs) lets Maven through the same proxy
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >&2
  fi
  # the host's pip configuration (index, extra indexes, cert, constraints), merged into one file;
  # file:// indexes and find-links paths are mounted into the build by tests/container/podman.py;
  # /opt/hourglass-wheels: prebuilt wheels the tests mount (PySpark is an sdist of 450 MB on PyPI)
  {
    echo "[global]"
    python3 -m pip config list 2>/dev/null | sed -n "s/^\(global\|:env:\)\.\([^=]*\)='\(.*\)'$/\2 = \3/p" \
      | sort -u -t= -k1,1
  } > "$root/etc/pip.conf"
  if grep -q '^find-links' "$root/etc/pip.conf"; then
    sed -i 's|^find-links = \(.*\)|find-links = \1 /opt/hourglass-wheels|' "$root/etc/pip.conf"
  else
    echo "find-links = /opt/hourglass-wheels" >> "$root/etc/pip.conf"
  fi
  if [ -f /etc/xdg/pip/constraints.txt ]; then
    mkdir -p "$root/etc/xdg/pip" && cp /etc/xdg/pip/constraints.txt "$root/etc/xdg/pip/"
  fi
  # smaller image: no apt lists, no docs
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
  tar -C "$root" -cf "$TARBALL.tmp" .
  mv "$TARBALL.tmp" "$TARBALL"
fi

podman --runtime "$RUNTIME" import --change 'CMD ["/bin/bash"]' "$TARBALL" "$IMAGE" >/dev/null
echo "$IMAGE"
