#!/usr/bin/env bash
# Installs the Debian packages Gangway's image and the real node of the tests need: podman
# (builds images with no registry), debootstrap (their base), runc, containerd, the CNI
# plugins, iptables and conntrack (kube-proxy). Needs root and apt. Safe to run again.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "tools/node-packages.sh: run as root (apt-get install)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
packages=(podman debootstrap runc containerd containernetworking-plugins iptables conntrack)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
