#!/bin/sh
# Install Kelvin for this user, from the unpacked tarball this script sits in. No root needed.
#
#   ./install.sh [--prefix DIR] [--skip-self-test]
#   ./install.sh --uninstall [--prefix DIR] [--remove-data]
#
# Puts the app in ~/.local/opt/kelvin (or --prefix), links ~/.local/bin/kelvin to it, adds
# kelvin.desktop and the icon to the menus (XDG folders), then runs `kelvin --self-test`.
# Installing again replaces the app and keeps every project and setting. Uninstalling removes
# what this script added; the projects and settings stay unless --remove-data is given.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
data_home=${XDG_DATA_HOME:-$HOME/.local/share}
prefix=$HOME/.local/opt/kelvin
bindir=$HOME/.local/bin
action=install
self_test=yes
remove_data=no

say() { printf 'kelvin install: %s\n' "$*"; }
die() { printf 'kelvin install: %s\n' "$*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a folder"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --uninstall) action=uninstall; shift ;;
    --remove-data) remove_data=yes; shift ;;
    --skip-self-test) self_test=no; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[ "$remove_data" = no ] || [ "$action" = uninstall ] || die "--remove-data goes with --uninstall"

case $prefix in /*) ;; *) prefix=$(pwd)/$prefix ;; esac
prefix=${prefix%/}
case $prefix in
  ""|/|"$HOME"|/usr|/usr/local|/opt|"$data_home"|"$HOME/.local") die "refusing to use '$prefix/' itself as Kelvin's folder; give a folder of its own, e.g. $prefix/kelvin" ;;
esac

desktop=$data_home/applications/kelvin.desktop
icon_png=$data_home/icons/hicolor/256x256/apps/kelvin.png
icon_svg=$data_home/icons/hicolor/scalable/apps/kelvin.svg
link=$bindir/kelvin

is_kelvin_bundle() {  # a folder this script may replace or remove: Kelvin's bundle, nothing else
  [ -x "$1/kelvin" ] && [ -f "$1/_internal/app/resources/taxonomy.toml" ]
}

refresh_menus() {
  if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$data_home/applications" 2>/dev/null || true
  fi
  if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$data_home/icons/hicolor/index.theme" ]; then
    gtk-update-icon-cache -q -t "$data_home/icons/hicolor" 2>/dev/null || true
  fi
}

# The Exec= value of a desktop entry: the path quoted, with the characters the spec reserves escaped.
desktop_exec() {
  printf '"%s"' "$(printf '%s' "$1" | sed 's/[\\"`$]/\\\\&/g')"
}

version_at_least() {  # version_at_least HAVE NEED: HAVE >= NEED, both "major.minor"
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -t. -k1,1n -k2,2n | head -n1)" = "$2" ]
}

check_glibc() {  # the bundle carries its libraries but uses the system's C library: too old a one cannot load it
  [ -f "$here/requires-glibc" ] || return 0
  need=$(tr -d ' \n' < "$here/requires-glibc")
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')
  [ -n "$have" ] || { say "could not tell this system's glibc version; Kelvin needs $need or newer"; return 0; }
  version_at_least "$have" "$need" || die "this Kelvin was built for glibc $need or newer and this system has $have \
(e.g. Ubuntu 22.04 has 2.35, Rocky/Alma 9 2.34). Nothing was installed. Build Kelvin on this system instead: \
see 'Building the installers' in Kelvin's README."
}

install_kelvin() {
  is_kelvin_bundle "$here/Kelvin" || die "no Kelvin bundle next to this script ($here/Kelvin); unpack the whole tarball"
  check_glibc
  if [ -e "$prefix" ] && ! is_kelvin_bundle "$prefix"; then
    die "$prefix exists and is not a Kelvin installation; choose another --prefix"
  fi
  mkdir -p "$(dirname -- "$prefix")" "$bindir" "$data_home/applications" \
    "$(dirname -- "$icon_png")" "$(dirname -- "$icon_svg")"
  # copy beside, then swap: an interrupted install leaves the previous Kelvin whole
  staging=$prefix.new.$$
  trap 'rm -rf "$staging"' EXIT INT TERM
  cp -R "$here/Kelvin" "$staging"
  if [ -e "$prefix" ]; then
    old=$prefix.old.$$
    mv "$prefix" "$old"
    mv "$staging" "$prefix"
    rm -rf "$old"
  else
    mv "$staging" "$prefix"
  fi
  trap - EXIT INT TERM

  if [ -e "$link" ] && [ ! -L "$link" ]; then
    say "leaving $link alone (it is not a link this script made); run $prefix/kelvin, or remove it and install again"
  else
    ln -sfn "$prefix/kelvin" "$link"
  fi
  exec_line=$(desktop_exec "$prefix/kelvin")
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in
      Exec=*) printf 'Exec=%s\n' "$exec_line" ;;
      TryExec=*) printf 'TryExec=%s\n' "$(printf '%s' "$prefix/kelvin" | sed 's/\\/\\\\/g')" ;;
      *) printf '%s\n' "$line" ;;
    esac
  done < "$here/kelvin.desktop" > "$desktop.tmp"
  mv "$desktop.tmp" "$desktop"
  cp "$here/kelvin.png" "$icon_png"
  cp "$here/kelvin.svg" "$icon_svg"
  refresh_menus
  say "installed in $prefix; menu entry $desktop"
  case ":$PATH:" in
    *":$bindir:"*) ;;
    *) say "$bindir is not on your PATH: start Kelvin from the menu, or add it (export PATH=\"$bindir:\$PATH\")" ;;
  esac
  if [ "$self_test" = yes ]; then
    say "running Kelvin's self-test …"
    "$prefix/kelvin" --self-test || die "the self-test failed (see above); the installed files are in place"
  fi
  say "done. Start Kelvin from your applications menu, or run: kelvin"
}

uninstall_kelvin() {
  default_data=$data_home/kelvin
  config=${KELVIN_CONFIG_DIR:-${XDG_CONFIG_HOME:-$HOME/.config}/kelvin}
  data=""
  if is_kelvin_bundle "$prefix"; then  # where the data is (kelvin.toml may have moved it), asked before it goes
    data=$("$prefix/kelvin" info 2>/dev/null | sed -n 's/^  data folder : //p') || data=""
  fi
  if is_kelvin_bundle "$prefix"; then
    rm -rf "$prefix"
    say "removed $prefix"
  elif [ -e "$prefix" ]; then
    die "$prefix is not a Kelvin installation; nothing removed"
  else
    say "no Kelvin in $prefix"
  fi
  if [ -L "$link" ] && [ "$(readlink "$link")" = "$prefix/kelvin" ]; then rm -f "$link"; fi
  rm -f "$desktop" "$icon_png" "$icon_svg"
  refresh_menus
  if [ "$remove_data" = yes ]; then
    # only Kelvin's own default folders: a data folder the artist chose elsewhere is never deleted
    for folder in "$default_data" "$config"; do
      if [ -d "$folder" ]; then rm -rf "$folder"; say "removed $folder"; fi
    done
    if [ -n "$data" ] && [ "$data" != "$default_data" ] && [ -d "$data" ]; then
      say "left your data folder $data in place (you chose it; delete it by hand if you mean to)"
    fi
  else
    say "your projects and settings stay: ${data:-$default_data} and $config (--remove-data removes them)"
  fi
}

if [ "$action" = install ]; then install_kelvin; else uninstall_kelvin; fi
