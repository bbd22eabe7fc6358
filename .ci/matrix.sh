#!/usr/bin/env bash
# make test-matrix: the version ranges of pyproject.toml, proven. Each environment below is made
# fresh from a clone of the committed HEAD, then runs the unit tests (the browser tests aside)
# and nbval on every notebook (both editions and the solutions), strict, as `make test` does.
#
#   .ci/matrix.sh [ENV ...]        ENV: lock oldest newest py312 py313 existing (default: all six)
#
#   lock      Python 3.11, every package at its version in .ci/constraints.txt
#   oldest    Python 3.11, every direct dependency (runtime and test extras) at the lower bound
#             pyproject.toml gives it; the packages under them as pip resolves them
#   newest    Python 3.11, the newest release on PyPI of everything (pip's local configuration,
#             which caps torch on the course machines, is set aside for this one install)
#   py312     Python 3.12 (python3.12 on PATH, else pyenv's; PY312=/path/to/python3.12 to choose),
#             the lock's versions
#   py313     Python 3.13 in a Debian trixie root made with debootstrap (native, no emulation;
#             needs root), the lock's versions
#   existing  Python 3.11 that already holds torch 2.14.1 and numpy 2.3.5 (as Colab, Kaggle or
#             a conda env does); `pip install -e ".[check]"` without the lock must keep both
#             and download no torch; then the same tests
#
# Installs go to $MATRIX_DIR (default /var/tmp/course-matrix), outside the checkout, with one
# shared pip cache: torch's Linux x86-64 wheels on PyPI are the CUDA build, and importing one
# needs its nvidia-* libraries (measured: `--no-deps` plus the pure-Python deps fails with
# "libcudnn.so.9: cannot open shared object file"), so each torch version's ~3 GB is
# downloaded once and then served from the cache (and cp311/cp313 share the nvidia wheels).
# Logs and one result line per environment: artifacts/matrix/ (summary.md is the README table).
set -uo pipefail
PROJECT="$(cd "$(dirname "$0")/.." && pwd)"
MATRIX_DIR="${MATRIX_DIR:-/var/tmp/course-matrix}"
OUT="$PROJECT/artifacts/matrix"
TRIXIE="${TRIXIE_ROOT:-$MATRIX_DIR/trixie-root}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PY311="${PY311:-python3.11}"
ENVS="${*:-lock oldest newest py312 py313 existing}"
mkdir -p "$MATRIX_DIR/pip-cache" "$OUT"
export PIP_CACHE_DIR="$MATRIX_DIR/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
COMMIT=$(git -C "$PROJECT" rev-parse --short HEAD)
[ -z "$(git -C "$PROJECT" status --porcelain --untracked-files=no)" ] || \
  echo "note: uncommitted changes are not tested; the matrix runs the committed HEAD ($COMMIT)"

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/steps.log"; }

# the direct dependencies of pyproject.toml at their lower bounds: name==floor, one a line
floors() {
  "$PY311" - "$PROJECT/pyproject.toml" <<'PY'
import re, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
deps = project["dependencies"] + [d for extra in project["optional-dependencies"].values() for d in extra]
seen = set()
for dep in deps:
    name, floor = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([^,;\s]+)", dep).groups()
    if name.lower() not in seen:
        seen.add(name.lower())
        print(f"{name}=={floor}")
PY
}

# run_tests ENV PYTHON SRC [prefix command...]: unit tests, then nbval, in SRC; JUnit XML to $OUT
# (for py313 the commands run inside the chroot: the prefix is `inroot`, paths are the root's)
run_tests() {
  local env=$1 py=$2 src=$3 xml=$4; shift 4
  local run=("$@")
  "${run[@]}" sh -c "cd $src && $py -c 'import matplotlib.font_manager' && \
    $py -m pytest -p no:cacheprovider -q -rfE -n 2 --dist worksteal -m 'not install' \
      --ignore=tests/test_browser_panel.py --junitxml=$xml/unit.xml tests" > "$OUT/$env-unit.log" 2>&1
  log "$env: unit tests: $(tail -n 1 "$OUT/$env-unit.log")"
  "${run[@]}" sh -c "cd $src && env -u COURSE_GPT2_WEIGHTS HF_HUB_CACHE=\$(mktemp -d) $py -m pytest -p no:cacheprovider \
      -q -rfE -n 2 --dist loadfile --nbval --nbval-current-env --nbval-sanitize-with .ci/nbval_sanitize.cfg \
      --junitxml=$xml/nbval.xml notebooks" > "$OUT/$env-nbval.log" 2>&1
  log "$env: nbval: $(tail -n 1 "$OUT/$env-nbval.log")"
}

# the versions that matter, as one line (the README table's columns)
VERSIONS_PY='import importlib.metadata as m, platform
names = ["torch", "numpy", "matplotlib", "jupyterlab", "ipywidgets", "ipykernel", "tiktoken", "regex",
         "safetensors", "huggingface_hub", "transformers", "pytest", "nbval", "hypothesis"]
print("Python " + platform.python_version() + ", " + ", ".join(n + " " + m.version(n) for n in names))'
versions() { "$@" -c "$VERSIONS_PY"; }

host_env() {  # host_env NAME PIP-INSTALL-ARGS...: fresh clone + venv on this machine, then the tests
  local env=$1; shift                     # (the venv's Python: $VENV_PY, else $PY311)
  local dir="$MATRIX_DIR/$env"
  rm -rf "$dir" && mkdir -p "$dir" && git clone -q "$PROJECT" "$dir/src" && echo "$dir/src" > "$OUT/$env.src"
  "${VENV_PY:-$PY311}" -m venv "$dir/venv"
  log "$env: pip install $*"
  (cd "$dir/src" && "$dir/venv/bin/python" -m pip install "$@") > "$OUT/$env-pip.log" 2>&1 \
    || { log "$env: pip install FAILED (see $OUT/$env-pip.log)"; echo "| $env | install failed | | |" > "$OUT/$env.row"; return 1; }
}

finish_row() {  # finish_row ENV VERSIONS-LINE XML-DIR
  local env=$1 vers=$2 xml=$3
  local commit; commit=$(git -C "$(cat "$OUT/$env.src")" rev-parse --short HEAD)   # the commit this env cloned
  "$PY311" - "$env" "$vers" "$xml" "$(date -u +%F)" "$commit" > "$OUT/$env.row" <<'PY'
import sys, xml.etree.ElementTree as ET
env, vers, xml, day, commit = sys.argv[1:]
def counts(name):
    try:
        s = ET.parse(f"{xml}/{name}.xml").getroot()
    except (OSError, ET.ParseError):
        return "did not run"
    s = s if s.tag == "testsuite" else s.find("testsuite")
    n, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
    ok = n - f - e - k
    return f"{ok} passed" + (f", {f + e} FAILED" if f + e else "") + (f", {k} skipped" if k else "")
print(f"| {env} | {vers} | {day} ({commit}) | {counts('unit')} | {counts('nbval')} |")
PY
  cat "$OUT/$env.row" | tee -a "$OUT/steps.log"
}

lock_env() {
  host_env lock -c .ci/constraints.txt -e ".[test]" || return
  local d="$MATRIX_DIR/lock"; run_tests lock "$d/venv/bin/python" "$d/src" "$d"
  finish_row lock "$(versions "$d/venv/bin/python")" "$d"
}

oldest_env() {
  floors > "$MATRIX_DIR/floors.txt"; cp "$MATRIX_DIR/floors.txt" "$OUT/oldest-floors.txt"
  host_env oldest -c "$MATRIX_DIR/floors.txt" -e ".[test]" || return
  local d="$MATRIX_DIR/oldest"; run_tests oldest "$d/venv/bin/python" "$d/src" "$d"
  finish_row oldest "$(versions "$d/venv/bin/python")" "$d"
}

newest_env() {
  # PIP_CONFIG_FILE=/dev/null: pip reads no configuration file, so this one install sees PyPI
  # only and no local cap on torch
  ( unset PIP_FIND_LINKS; export PIP_CONFIG_FILE=/dev/null
    host_env newest --upgrade --upgrade-strategy eager -e ".[test]" ) || return
  local d="$MATRIX_DIR/newest"; run_tests newest "$d/venv/bin/python" "$d/src" "$d"
  finish_row newest "$(versions "$d/venv/bin/python")" "$d"
}

py312_env() {
  local py="${PY312:-}" candidate
  if [ -z "$py" ]; then   # the first python3.12 that runs (a pyenv shim on PATH may not)
    for candidate in $(command -v python3.12) "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
      "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && { py=$candidate; break; }
    done
  fi
  [ -n "$py" ] && [ -x "$py" ] || { log "py312: no python3.12 found (PY312=/path/to/python3.12)"; echo "| py312 | did not run: no Python 3.12 | | |" > "$OUT/py312.row"; return 1; }
  VENV_PY="$py" host_env py312 -c .ci/constraints.txt -e ".[test]" || return
  local d="$MATRIX_DIR/py312"; run_tests py312 "$d/venv/bin/python" "$d/src" "$d"
  finish_row py312 "$(versions "$d/venv/bin/python")" "$d"
}

existing_env() {
  # the learner's environment: torch 2.14.1 and numpy 2.3.5 first, then the course on top
  host_env existing torch==2.14.1 numpy==2.3.5 || return
  local d="$MATRIX_DIR/existing" before after
  before=$("$d/venv/bin/python" -m pip freeze | grep -iE "^(torch|numpy)==")
  (cd "$d/src" && "$d/venv/bin/python" -m pip install -v -e ".[check]") > "$OUT/existing-course-pip.log" 2>&1 \
    || { log "existing: pip install -e .[check] FAILED"; return 1; }
  after=$("$d/venv/bin/python" -m pip freeze | grep -iE "^(torch|numpy)==")
  local downloads; downloads=$(grep -cE "^\s*Downloading https?://" "$OUT/existing-course-pip.log")
  log "existing: before $(echo $before) | after $(echo $after) | downloads by the course's install: $downloads" \
      "($(grep -E "^\s*Downloading https?://" "$OUT/existing-course-pip.log" | grep -ciE "/torch-|/nvidia") of them torch or nvidia)"
  [ "$before" = "$after" ] || log "existing: FAILED: pip changed torch or numpy"
  # the unit tests' own tools, without the lock (which would move numpy to its locked version)
  "$d/venv/bin/python" -m pip install -q PyYAML hypothesis pytest-xdist transformers \
      > "$OUT/existing-testtools-pip.log" 2>&1 || log "existing: installing the test tools FAILED"
  run_tests existing "$d/venv/bin/python" "$d/src" "$d"
  finish_row existing "$(versions "$d/venv/bin/python")" "$d"
}

# ---- Python 3.13: a Debian trixie root -----------------------------------------------------
inroot() {  # inroot COMMAND...: run inside the trixie root, clean environment
  chroot "$TRIXIE" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=/etc/ssl/certs/host-ca-bundle.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 \
    PIP_CACHE_DIR=/var/cache/pip PIP_PROGRESS_BAR=off "$@"
}
unmount_root() {
  for m in var/cache/pip opt/local-wheels dev/pts dev sys proc ""; do
    mountpoint -q "$TRIXIE/$m" 2>/dev/null && umount "$TRIXIE/$m"
  done
}
py313_env() {
  [ "$(id -u)" = 0 ] || { log "py313: needs root (debootstrap, chroot)"; return 1; }
  if [ ! -x "$TRIXIE/usr/bin/python3.13" ]; then
    log "py313: debootstrap trixie $TRIXIE"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,git,make \
      trixie "$TRIXIE" "$MIRROR" > "$OUT/py313-debootstrap.log" 2>&1 || { log "py313: debootstrap FAILED"; return 1; }
  fi
  trap unmount_root EXIT
  # the root a mount of its own, as in a container: the grader's private /tmp makes "/" private
  # in its mount namespace, which needs "/" to be a mount point (in a bare chroot it is not)
  mountpoint -q "$TRIXIE" || mount --bind "$TRIXIE" "$TRIXIE"
  mountpoint -q "$TRIXIE/proc" || mount -t proc proc "$TRIXIE/proc"
  mountpoint -q "$TRIXIE/sys" || mount -t sysfs sys "$TRIXIE/sys"
  mountpoint -q "$TRIXIE/dev" || mount --bind /dev "$TRIXIE/dev"
  mountpoint -q "$TRIXIE/dev/pts" || mount --bind /dev/pts "$TRIXIE/dev/pts"
  mkdir -p "$TRIXIE/var/cache/pip" && { mountpoint -q "$TRIXIE/var/cache/pip" || mount --bind "$PIP_CACHE_DIR" "$TRIXIE/var/cache/pip"; }
  cp /etc/resolv.conf "$TRIXIE/etc/resolv.conf"
  cp /etc/ssl/certs/ca-certificates.crt "$TRIXIE/etc/ssl/certs/host-ca-bundle.crt"
  # make (tests/test_environment.py dry-runs the Makefile) and the fonts of apt.txt (plots)
  if ! inroot sh -c "command -v make && dpkg -s $(echo $(cat "$PROJECT/apt.txt"))" > /dev/null 2>&1; then
    log "py313: apt-get install make $(echo $(cat "$PROJECT/apt.txt"))"
    inroot sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq make $(echo $(cat "$PROJECT/apt.txt"))" \
      > "$OUT/py313-apt.log" 2>&1 || { log "py313: apt-get FAILED"; return 1; }
  fi
  local local_wheels=""
  if [ -d /opt/pypi-more/files ]; then   # this machine's copies of PyPI wheels (nvidia-*): no second download
    mkdir -p "$TRIXIE/opt/local-wheels"
    mountpoint -q "$TRIXIE/opt/local-wheels" || mount --bind -o ro /opt/pypi-more/files "$TRIXIE/opt/local-wheels"
    local_wheels="--find-links /opt/local-wheels"
  fi
  rm -rf "$TRIXIE/root/course" "$TRIXIE/opt/venv313" "$TRIXIE/root/xml" && mkdir -p "$TRIXIE/root/xml"
  git clone -q "$PROJECT" "$TRIXIE/root/course" && echo "$TRIXIE/root/course" > "$OUT/py313.src"
  log "py313: $(inroot python3 --version); pip install -c .ci/constraints.txt -e .[test]"
  inroot sh -c "python3 -m venv /opt/venv313 && cd /root/course && /opt/venv313/bin/python -m pip install \
      $local_wheels -c .ci/constraints.txt -e '.[test]'" > "$OUT/py313-pip.log" 2>&1 \
    || { log "py313: pip install FAILED (see $OUT/py313-pip.log)"; echo "| py313 | install failed | | |" > "$OUT/py313.row"; return 1; }
  run_tests py313 /opt/venv313/bin/python /root/course /root/xml inroot
  finish_row py313 "$(versions inroot /opt/venv313/bin/python)" "$TRIXIE/root/xml"
  unmount_root; trap - EXIT
}

log "matrix at $COMMIT: $ENVS (installs in $MATRIX_DIR)"
for env in $ENVS; do
  case $env in
    lock) lock_env ;; oldest) oldest_env ;; newest) newest_env ;; py312) py312_env ;; py313) py313_env ;; existing) existing_env ;;
    *) log "unknown environment: $env"; exit 2 ;;
  esac
done
{
  echo "| environment | versions | date (commit) | unit tests (browser aside) | nbval cells (both editions + solutions) |"
  echo "|---|---|---|---|---|"
  for env in lock oldest newest py312 py313 existing; do [ -f "$OUT/$env.row" ] && cat "$OUT/$env.row"; done
} > "$OUT/summary.md"
cat "$OUT/summary.md"
! grep -qE "FAILED|did not run|install failed" "$OUT/summary.md"
