#!/usr/bin/env bash
# make test-matrix: the version ranges of pyproject.toml, and the Pythons and install paths people
# have, proven. Each environment below is made fresh from a clone of the committed HEAD, then
# runs the unit tests (the browser tests aside) and nbval on every notebook (both editions and the
# solutions), strict, as `make test` does.
#
#   .ci/matrix.sh [ENV ...]        ENV: the names below (default: all of them)
#
#   lock      Python 3.11, every package at its version in .ci/constraints.txt
#   oldest    Python 3.11, every direct dependency (runtime and test extras) at the lower bound
#             pyproject.toml gives it; the packages under them as pip resolves them
#   newest    Python 3.11, the newest release on PyPI of everything (pip's local configuration,
#             which caps torch on the course machines, is set aside for this one install)
#   py312     Python 3.12 (python3.12 on PATH, else pyenv's; PY312=/path/to/python3.12 to choose),
#             the lock's versions
#   py313     Python 3.13 in a Debian trixie root, the lock's versions
#   py314     Python 3.14 in a Debian forky root, the lock's versions
#   debian12  Debian 12's own python3 (3.11.2) in a bookworm root: `make setup PYTHON=/usr/bin/python3`
#             and `make setup-test` as a learner runs them, then the tests in that .venv
#   uv        a venv made by uv (no pip in it): `uv venv`, torch as the Makefile takes it, then
#             `uv pip install -c .ci/constraints.txt -e ".[test]"`; uv itself in a venv of its own
#   existing  Python 3.11 that already holds torch 2.14.1 and numpy 2.3.5 (as Colab, Kaggle or
#             a conda env does); `pip install -e ".[check,lab]"` without the lock must keep both
#             and download no torch; then the same tests
#   colab     Google Colab's CPU runtime (.ci/platforms/colab-2026-08-19-pip-freeze.txt): Python 3.13
#             in a Debian trixie root (Colab's is 3.13.15), and Colab's versions of every package
#             the course uses (torch 2.11.0, numpy 2.1.3, matplotlib 3.10.0, ipywidgets 7.7.1,
#             ipykernel 6.17.1, jupyter_client 7.4.9, ...), all from PyPI: torch 2.11.0 is PyPI's
#             build of Colab's 2.11.0+cpu (PyTorch's CPU index is not reached here). Then pip's
#             dry run of the README's Colab install must change none of Colab's packages
#             (.ci/platforms/platform_set.py), the course is installed that way (`pip install`
#             of the checkout instead of the git URL, not editable), nbval and pytest-xdist are
#             added at Colab's versions of what they need, and every notebook of both editions
#             runs under nbval with Colab's ipykernel and jupyter_client, with the exercise checks
#             (tests/test_exercises.py) and the platform tests on the installed course
#   kaggle    the same for Kaggle, from Colab's list of 2026-05-08 (Kaggle's image is built on
#             Colab's May 2026 runtime): Python 3.12 (as for py312), torch 2.10.0, numpy 2.0.2,
#             ipywidgets 7.7.1, ipykernel 6.17.1
#   nocjk     Debian 12's python3 in a bookworm root of its own without a CJK font (as Colab, Kaggle
#             and a fresh Debian are: apt.txt's fonts left out), the lock's versions: the Chinese
#             labels of the diagrams and the pipeline map drawn with the course's own font
#             (data/fonts/), no glyph missing (pictures in artifacts/matrix/nocjk-pictures/), then
#             the same tests
#   nonroot-readonly  an instructor's shared install: `make setup-test` by root, then the checkout
#             made read-only (chmod -R a-w) and `make test` and the grader's sandbox tests run
#             there by an unprivileged user (NONROOT_USER, default probeuser) with a fresh HOME;
#             the Python must be one that user can read (NONROOT_PY, default /usr/bin/python3)
#
# The Debian roots (py313, py314, debian12) are made with debootstrap under $MATRIX_DIR (native,
# no emulation; needs root) and reused. Installs go to $MATRIX_DIR (default /var/tmp/course-matrix),
# outside the checkout, with one shared pip cache: torch's Linux x86-64 wheels on PyPI are the
# CUDA build, and importing one needs its nvidia-* libraries (measured: `--no-deps` plus the
# pure-Python deps fails with "libcudnn.so.9: cannot open shared object file"), so each torch
# version's ~3 GB is downloaded once and then served from the cache.
# Logs and one result line per environment: artifacts/matrix/ (summary.md is the docs' table).
set -uo pipefail
PROJECT="$(cd "$(dirname "$0")/.." && pwd)"
MATRIX_DIR="${MATRIX_DIR:-/var/tmp/course-matrix}"
OUT="$PROJECT/artifacts/matrix"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PY311="${PY311:-python3.11}"
ALL_ENVS="lock oldest newest py312 py313 py314 debian12 uv existing colab kaggle nonroot-readonly nocjk"
ENVS="${*:-$ALL_ENVS}"
mkdir -p "$MATRIX_DIR/pip-cache" "$OUT"
export PIP_CACHE_DIR="$MATRIX_DIR/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
COMMIT=$(git -C "$PROJECT" rev-parse --short HEAD)
[ -z "$(git -C "$PROJECT" status --porcelain --untracked-files=no)" ] || \
  echo "note: uncommitted changes are not tested; the matrix runs the committed HEAD ($COMMIT)"

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/steps.log"; }

# the direct dependencies of pyproject.toml at their lower bounds: name==floor, one a line (a
# package named twice, as ipywidgets by the runtime and by the lab extra, at its higher floor; an
# extra that names another, as test names course_lib[lab], adds nothing of its own)
floors() {
  "$PY311" - "$PROJECT/pyproject.toml" <<'PY'
import re, sys, tomllib
from packaging.version import Version
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
deps = project["dependencies"] + [d for extra in project["optional-dependencies"].values() for d in extra]
floor = {}
for dep in deps:
    if re.fullmatch(r"course_lib\[[a-z,]+\]", dep):
        continue
    name, version = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([^,;\s]+)", dep).groups()
    if name.lower() not in floor or Version(version) > Version(floor[name.lower()][1]):
        floor[name.lower()] = (name, version)
for name, version in floor.values():
    print(f"{name}=={version}")
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
  (cd "$d/src" && "$d/venv/bin/python" -m pip install -v -e ".[check,lab]") > "$OUT/existing-course-pip.log" 2>&1 \
    || { log "existing: pip install -e .[check,lab] FAILED"; return 1; }
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

# ---- Colab and Kaggle: their package sets (.ci/platforms/) -----------------------------------
# What the course uses of a platform's set: the runtime's packages and the notebooks' kernel
PLATFORM_USES="torch numpy matplotlib ipywidgets ipykernel jupyter_client tiktoken regex safetensors huggingface_hub pytest"
PLATFORM_VERSIONS_PY='import importlib.metadata as m, platform
names = ["torch", "numpy", "matplotlib", "ipywidgets", "widgetsnbextension", "ipykernel", "jupyter_client",
         "tiktoken", "regex", "safetensors", "huggingface_hub", "pytest", "nbval"]
print("Python " + platform.python_version() + ", " + ", ".join(n + " " + m.version(n) for n in names))'
# platform_steps ENV LIST SRC VENV XML [prefix command...]: in SRC (a clone), with the venv VENV
# (paths as the prefix sees them): the platform's versions, the dry run, the README's install, the tests
platform_steps() {
  local env=$1 list=".ci/platforms/$2" src=$3 py="$4/bin/python" xml=$5 status=0; shift 5
  local run=("$@")
  log "$env: $("${run[@]}" "$py" --version); pip install -c <$list> $PLATFORM_USES"
  "${run[@]}" sh -c "cd $src && $py .ci/platforms/platform_set.py constraints $list > $xml/platform.txt && \
      $py -m pip install -c $xml/platform.txt $PLATFORM_USES" > "$OUT/$env-pip.log" 2>&1 \
    || { log "$env: pip install FAILED (see $OUT/$env-pip.log)"; echo "| $env | install failed | | |" > "$OUT/$env.row"; return 1; }
  # the README's Colab cell installs the course from its git URL: here from the clone, not editable
  "${run[@]}" sh -c "cd $src && $py -m pip install --dry-run --report $xml/report.json . && \
      $py .ci/platforms/platform_set.py unchanged $list $xml/report.json" > "$OUT/$env-dry-run.log" 2>&1 || status=1
  log "$env: pip install --dry-run --report: $(tail -n 1 "$OUT/$env-dry-run.log")"
  [ $status = 0 ] || { echo "| $env | install FAILED: it would change the platform's packages | | |" > "$OUT/$env.row"; return 1; }
  "${run[@]}" sh -c "cd $src && $py -m pip freeze > $xml/before.txt && $py -m pip install . && \
      $py -m pip freeze --exclude course_lib > $xml/after.txt && diff $xml/before.txt $xml/after.txt" \
      > "$OUT/$env-course-pip.log" 2>&1 \
    || { log "$env: the course's install FAILED or changed a package (see $OUT/$env-course-pip.log)"; echo "| $env | install FAILED | | |" > "$OUT/$env.row"; return 1; }
  log "$env: pip install . (the course, as the README's cell): nothing else changed"
  # the test tools, at the platform's versions of what they need
  "${run[@]}" sh -c "cd $src && $py -m pip install -c $xml/platform.txt nbval pytest-xdist hypothesis PyYAML" \
      > "$OUT/$env-testtools-pip.log" 2>&1 || log "$env: installing the test tools FAILED"
  # -P: the installed course_lib, not the clone's folder (python -m would put the clone first)
  "${run[@]}" sh -c "cd $src && $py -c 'import matplotlib.font_manager' && \
    $py -P -m pytest -p no:cacheprovider -q -rfE -n 2 --dist worksteal --junitxml=$xml/unit.xml \
      tests/test_exercises.py tests/test_platforms.py tests/test_widget_view.py" > "$OUT/$env-unit.log" 2>&1
  log "$env: unit tests (exercise checks, platform, widgets): $(tail -n 1 "$OUT/$env-unit.log")"
  "${run[@]}" sh -c "cd $src && env -u COURSE_GPT2_WEIGHTS HF_HUB_CACHE=\$(mktemp -d) $py -P -m pytest -p no:cacheprovider \
      -q -rfE -n 2 --dist loadfile --nbval --nbval-current-env --nbval-sanitize-with .ci/nbval_sanitize.cfg \
      --junitxml=$xml/nbval.xml notebooks" > "$OUT/$env-nbval.log" 2>&1
  log "$env: nbval: $(tail -n 1 "$OUT/$env-nbval.log")"
}

colab_env() {   # Python 3.13 in the trixie root (as py313), Colab's set of 2026-08-19
  enter_root colab trixie || { unmount_root; return 1; }
  inroot python3 -m venv /opt/venv
  platform_steps colab colab-2026-08-19-pip-freeze.txt /root/course /opt/venv /root/xml inroot \
    || { unmount_root; trap - EXIT; return 1; }
  finish_row colab "$(inroot /opt/venv/bin/python -c "$PLATFORM_VERSIONS_PY") (torch: PyPI's 2.11.0, Colab's is 2.11.0+cpu); \
the README's install changed none of Colab's packages" "$ROOT_DIR/root/xml"
  unmount_root; trap - EXIT
}

kaggle_env() {  # Python 3.12 on this machine (as py312), Colab's set of 2026-05-08 (Kaggle's base)
  local py="${PY312:-}" candidate dir="$MATRIX_DIR/kaggle"
  if [ -z "$py" ]; then
    for candidate in $(command -v python3.12) "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
      "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && { py=$candidate; break; }
    done
  fi
  [ -n "$py" ] && [ -x "$py" ] || { log "kaggle: no python3.12 found (PY312=/path/to/python3.12)"; echo "| kaggle | did not run: no Python 3.12 | | |" > "$OUT/kaggle.row"; return 1; }
  rm -rf "$dir" && mkdir -p "$dir/xml" && git clone -q "$PROJECT" "$dir/src" && echo "$dir/src" > "$OUT/kaggle.src"
  "$py" -m venv "$dir/venv"
  platform_steps kaggle colab-2026-05-08-pip-freeze.txt "$dir/src" "$dir/venv" "$dir/xml" env || return 1
  finish_row kaggle "$("$dir/venv/bin/python" -c "$PLATFORM_VERSIONS_PY") (torch: PyPI's 2.10.0, Kaggle's is 2.10.0+cpu); \
the README's install changed none of Kaggle's packages" "$dir/xml"
}

# ---- Debian roots: trixie (py313), forky (py314), bookworm (debian12) ------------------------
ROOT_DIR=""          # the root the commands below act on (set by enter_root)
inroot() {  # inroot COMMAND...: run inside $ROOT_DIR, clean environment
  chroot "$ROOT_DIR" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=/etc/ssl/certs/host-ca-bundle.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 \
    PIP_CACHE_DIR=/var/cache/pip PIP_PROGRESS_BAR=off ${ROOT_FIND_LINKS:+PIP_FIND_LINKS="$ROOT_FIND_LINKS"} "$@"
}
unmount_root() {
  [ -n "$ROOT_DIR" ] || return 0
  for m in opt/local-wheels/more opt/local-wheels/wheels var/cache/pip dev/pts dev sys proc ""; do
    mountpoint -q "$ROOT_DIR/$m" 2>/dev/null && umount "$ROOT_DIR/$m"
  done
  ROOT_DIR=""
}
# enter_root ENV SUITE: debootstrap SUITE under $MATRIX_DIR once (kept for later runs), mount what
# the tests need, clone the project to /root/course in it. ROOT_NAME (default SUITE-root) and
# ROOT_PACKAGES (default apt.txt's packages) make another root: nocjk's, without fonts
enter_root() {
  local env=$1 suite=$2 script="" packages
  packages=${ROOT_PACKAGES-$(echo $(cat "$PROJECT/apt.txt"))}
  [ "$(id -u)" = 0 ] || { log "$env: needs root (debootstrap, chroot)"; echo "| $env | did not run: needs root | | |" > "$OUT/$env.row"; return 1; }
  ROOT_DIR="$MATRIX_DIR/${ROOT_NAME:-$suite-root}"
  [ "$suite" = forky ] && script=/usr/share/debootstrap/scripts/sid     # sid's script serves forky
  if [ ! -x "$ROOT_DIR/usr/bin/python3" ]; then
    log "$env: debootstrap $suite $ROOT_DIR"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,git,make${packages:+,${packages// /,}} \
      "$suite" "$ROOT_DIR" "$MIRROR" $script > "$OUT/$env-debootstrap.log" 2>&1 \
      || { log "$env: debootstrap FAILED (see $OUT/$env-debootstrap.log)"; echo "| $env | install failed: debootstrap | | |" > "$OUT/$env.row"; ROOT_DIR=""; return 1; }
  fi
  # a suite still in the making (forky) publishes a Release file whose Valid-Until has passed
  echo 'Acquire::Check-Valid-Until "false";' > "$ROOT_DIR/etc/apt/apt.conf.d/99course-matrix"
  trap unmount_root EXIT
  # the root a mount of its own, as in a container: the grader's private /tmp makes "/" private
  # in its mount namespace, which needs "/" to be a mount point (in a bare chroot it is not)
  mountpoint -q "$ROOT_DIR" || mount --bind "$ROOT_DIR" "$ROOT_DIR"
  mountpoint -q "$ROOT_DIR/proc" || mount -t proc proc "$ROOT_DIR/proc"
  mountpoint -q "$ROOT_DIR/sys" || mount -t sysfs sys "$ROOT_DIR/sys"
  mountpoint -q "$ROOT_DIR/dev" || mount --bind /dev "$ROOT_DIR/dev"
  mountpoint -q "$ROOT_DIR/dev/pts" || mount --bind /dev/pts "$ROOT_DIR/dev/pts"
  mkdir -p "$ROOT_DIR/var/cache/pip" && { mountpoint -q "$ROOT_DIR/var/cache/pip" || mount --bind "$PIP_CACHE_DIR" "$ROOT_DIR/var/cache/pip"; }
  cp /etc/resolv.conf "$ROOT_DIR/etc/resolv.conf"
  cp /etc/ssl/certs/ca-certificates.crt "$ROOT_DIR/etc/ssl/certs/host-ca-bundle.crt"
  # this machine's copies of PyPI wheels (torch's CPU build, nvidia-*), if it has them: no second download
  ROOT_FIND_LINKS=""
  local host name
  for host in /opt/wheels:wheels /opt/pypi-more/files:more; do
    name=${host#*:}; host=${host%%:*}
    [ -d "$host" ] || continue
    mkdir -p "$ROOT_DIR/opt/local-wheels/$name"
    mountpoint -q "$ROOT_DIR/opt/local-wheels/$name" || mount --bind -o ro "$host" "$ROOT_DIR/opt/local-wheels/$name"
    ROOT_FIND_LINKS="$ROOT_FIND_LINKS /opt/local-wheels/$name"
  done
  ROOT_FIND_LINKS=${ROOT_FIND_LINKS# }
  # make (tests/test_environment.py dry-runs the Makefile) and the fonts of apt.txt (plots)
  if ! inroot sh -c "command -v make ${packages:+&& dpkg -s $packages}" > /dev/null 2>&1; then
    log "$env: apt-get install make $packages"
    inroot sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq make $packages" \
      > "$OUT/$env-apt.log" 2>&1 || { log "$env: apt-get FAILED"; return 1; }
  fi
  rm -rf "$ROOT_DIR/root/course" "$ROOT_DIR/opt/venv" "$ROOT_DIR/root/xml" && mkdir -p "$ROOT_DIR/root/xml"
  git clone -q "$PROJECT" "$ROOT_DIR/root/course" && echo "$ROOT_DIR/root/course" > "$OUT/$env.src"
}

root_python_env() {  # root_python_env ENV SUITE: the root's python3, a venv, the lock
  local env=$1
  enter_root "$@" || { unmount_root; return 1; }
  log "$env: $(inroot python3 --version); pip install -c .ci/constraints.txt -e .[test]"
  inroot sh -c "python3 -m venv /opt/venv && cd /root/course && /opt/venv/bin/python -m pip install \
      -c .ci/constraints.txt -e '.[test]'" > "$OUT/$env-pip.log" 2>&1 \
    || { log "$env: pip install FAILED (see $OUT/$env-pip.log)"; echo "| $env | install failed | | |" > "$OUT/$env.row"; unmount_root; return 1; }
  run_tests "$env" /opt/venv/bin/python /root/course /root/xml inroot
  finish_row "$env" "$(versions inroot /opt/venv/bin/python)" "$ROOT_DIR/root/xml"
  unmount_root; trap - EXIT
}

debian12_env() {  # the learner's path on Debian 12, with its own python3: make setup, then make setup-test
  enter_root debian12 bookworm || { unmount_root; return 1; }
  log "debian12: $(inroot /usr/bin/python3 --version); make setup PYTHON=/usr/bin/python3"
  inroot sh -c "cd /root/course && make setup PYTHON=/usr/bin/python3" > "$OUT/debian12-setup.log" 2>&1 \
    || { log "debian12: make setup FAILED (see $OUT/debian12-setup.log)"; echo "| debian12 | install failed: make setup | | |" > "$OUT/debian12.row"; unmount_root; return 1; }
  log "debian12: make setup: $(grep -E '^torch' "$OUT/debian12-setup.log" | head -n 1) | $(tail -n 1 "$OUT/debian12-setup.log")"
  inroot sh -c "cd /root/course && make setup-test PYTHON=/usr/bin/python3" > "$OUT/debian12-setup-test.log" 2>&1 \
    || { log "debian12: make setup-test FAILED"; echo "| debian12 | install failed: make setup-test | | |" > "$OUT/debian12.row"; unmount_root; return 1; }
  run_tests debian12 /root/course/.venv/bin/python /root/course /root/xml inroot
  finish_row debian12 "$(versions inroot /root/course/.venv/bin/python)" "$ROOT_DIR/root/xml"
  unmount_root; trap - EXIT
}

# ---- nocjk: no CJK font on the machine ------------------------------------------------------
# the zh pictures, checked where only the course's own font has Chinese: no CJK family installed,
# every character of the zh diagrams and the pipeline map in DejaVu Sans or Course CJK SC, no
# missing-glyph warning; the PNGs kept for a look
NOCJK_PY='
import sys, warnings
import matplotlib
matplotlib.use("Agg")
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font
from course_lib.ui import diagrams, fonts
from course_lib.ui.language import set_language
from course_lib.ui.pipeline_map import pipeline_map
from course_lib.model.attention import causal_mask
assert fonts.cjk_family() is None, "a CJK font is installed: " + str(sorted({f.name for f in font_manager.fontManager.ttflist}))
family = fonts.use_readable_fonts()
assert family == ["DejaVu Sans", fonts.COURSE_CJK_FAMILY], family
have = set()
for name in family:
    have |= set(FT2Font(font_manager.findfont(name, fallback_to_default=False)).get_charmap())
set_language("zh")
warnings.simplefilter("error")
figures = {"map": pipeline_map("03").figure(),
           "merge": diagrams.merge_loop_diagram([["t", "h", "e"], ["th", "e"], ["the"]]),
           "mask": diagrams.causal_mask_diagram(causal_mask(4), list("abab")),
           "heads": diagrams.head_split_diagram(3, 6, 3), "kv": diagrams.kv_cache_diagram(list("abaab"), 3)}
drawn = set()
for name, fig in figures.items():
    fig.savefig(f"{sys.argv[1]}/zh-{name}.png", dpi=90)
    drawn |= {c for t in fig.findobj(matplotlib.text.Text) for c in t.get_text() if not c.isspace()}
missing = sorted(c for c in drawn if ord(c) not in have)
chinese = sum(1 for c in drawn if "\u4e00" <= c <= "\u9fff")
assert not missing and chinese > 20, (missing, chinese)
print(f"{len(figures)} zh pictures: {len(drawn)} distinct characters, {chinese} of them Chinese, every one in {family}")
'
nocjk_env() {
  export ROOT_NAME=bookworm-nocjk-root ROOT_PACKAGES=""
  enter_root nocjk bookworm; local status=$?
  unset ROOT_NAME ROOT_PACKAGES
  [ $status = 0 ] || { unmount_root; return 1; }
  log "nocjk: $(inroot python3 --version), no CJK font; pip install -c .ci/constraints.txt -e .[test]"
  inroot sh -c "python3 -m venv /opt/venv && cd /root/course && /opt/venv/bin/python -m pip install \
      -c .ci/constraints.txt -e '.[test]'" > "$OUT/nocjk-pip.log" 2>&1 \
    || { log "nocjk: pip install FAILED (see $OUT/nocjk-pip.log)"; echo "| nocjk | install failed | | |" > "$OUT/nocjk.row"; unmount_root; return 1; }
  mkdir -p "$OUT/nocjk-pictures" "$ROOT_DIR/root/pictures"
  printf '%s' "$NOCJK_PY" > "$ROOT_DIR/root/pictures.py"
  if inroot sh -c "cd /root/course && /opt/venv/bin/python /root/pictures.py /root/pictures" > "$OUT/nocjk-fonts.log" 2>&1; then
    log "nocjk: $(tail -n 1 "$OUT/nocjk-fonts.log")"
  else
    log "nocjk: the zh pictures FAILED (see $OUT/nocjk-fonts.log)"
  fi
  cp "$ROOT_DIR"/root/pictures/*.png "$OUT/nocjk-pictures/" 2>/dev/null
  run_tests nocjk /opt/venv/bin/python /root/course /root/xml inroot
  finish_row nocjk "$(versions inroot /opt/venv/bin/python); no CJK font: $(grep -q '^5 zh pictures' "$OUT/nocjk-fonts.log" \
    && echo 'zh pictures drawn from the course font' || echo 'zh pictures FAILED')" "$ROOT_DIR/root/xml"
  unmount_root; trap - EXIT
}

# ---- uv: a venv without pip ------------------------------------------------------------------
uv_env() {
  local dir="$MATRIX_DIR/uv" tool="$MATRIX_DIR/uv-tool" links="" index d
  if [ ! -x "$tool/bin/uv" ]; then     # uv itself, from PyPI, in a venv of its own (not the course's)
    "$PY311" -m venv "$tool" && "$tool/bin/python" -m pip install -q uv > "$OUT/uv-tool-pip.log" 2>&1 \
      || { log "uv: installing uv FAILED"; echo "| uv | install failed: uv | | |" > "$OUT/uv.row"; return 1; }
  fi
  export UV_CACHE_DIR="$MATRIX_DIR/uv-cache"
  [ -z "${SSL_CERT_FILE:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ] && export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
  for d in /opt/wheels /opt/pypi-more/files; do [ -d "$d" ] && links="$links --find-links $d"; done   # as for pip above
  rm -rf "$dir" && mkdir -p "$dir" && git clone -q "$PROJECT" "$dir/src" && echo "$dir/src" > "$OUT/uv.src"
  log "uv: $("$tool/bin/uv" --version); uv venv; uv pip install -c .ci/constraints.txt -e .[test]"
  ( cd "$dir/src" && set -e
    "$tool/bin/uv" venv --python "$PY311" "$dir/venv"
    # torch as the Makefile takes it: alone, from PyTorch's CPU index when it answers
    index=$("$dir/venv/bin/python" .ci/torch_index.py https://download.pytorch.org/whl/cpu)
    if [ -n "$index" ]; then "$tool/bin/uv" pip install --python "$dir/venv/bin/python" --no-deps --index-url "$index" -c .ci/constraints.txt torch; fi
    "$tool/bin/uv" pip install --python "$dir/venv/bin/python" $links -c .ci/constraints.txt -e ".[test]"
  ) > "$OUT/uv-pip.log" 2>&1 || { log "uv: install FAILED (see $OUT/uv-pip.log)"; echo "| uv | install failed | | |" > "$OUT/uv.row"; return 1; }
  "$dir/venv/bin/python" -m pip --version > /dev/null 2>&1 && log "uv: note: the venv has pip"
  run_tests uv "$dir/venv/bin/python" "$dir/src" "$dir" env PATH="$tool/bin:$PATH"
  finish_row uv "$(versions "$dir/venv/bin/python") (uv $("$tool/bin/uv" --version | cut -d' ' -f2))" "$dir"
}

# ---- an instructor's shared install: read-only, not root -------------------------------------
nonroot_readonly_env() {
  local dir="$MATRIX_DIR/nonroot-readonly" user="${NONROOT_USER:-probeuser}" py="${NONROOT_PY:-/usr/bin/python3}"
  local home run status=0 who
  [ -d "$dir" ] && chmod -R u+w "$dir" 2>/dev/null
  rm -rf "$dir" && mkdir -p "$dir" && git clone -q "$PROJECT" "$dir/src" && echo "$dir/src" > "$OUT/nonroot-readonly.src"
  log "nonroot-readonly: make setup-test PYTHON=$py (as $(id -un))"
  (cd "$dir/src" && make setup-test PYTHON="$py") > "$OUT/nonroot-readonly-pip.log" 2>&1 \
    || { log "nonroot-readonly: make setup-test FAILED"; echo "| nonroot-readonly | install failed | | |" > "$OUT/nonroot-readonly.row"; return 1; }
  chmod -R a-w "$dir/src"
  home=$(mktemp -d)
  # as the user, in the read-only checkout: `make test`, then the grader's sandbox tests (the
  # class graded by a normal user; they are in `make test-all`, whose browser stage needs the
  # site's npm packages installed into the checkout)
  local grader="cd '$dir/src' && HOME='$home' COURSE_ARTIFACTS='$home/artifacts' .venv/bin/python -m pytest \
-p no:cacheprovider -q -rs -m sandbox -n 2 tests" grader_status=0
  if [ "$(id -u)" = 0 ]; then
    id "$user" > /dev/null 2>&1 || { log "nonroot-readonly: no user $user (NONROOT_USER=...)"; echo "| nonroot-readonly | did not run: no user $user | | |" > "$OUT/nonroot-readonly.row"; return 1; }
    chown "$user" "$home"; who=$user
    log "nonroot-readonly: make test as $who, HOME=$home, the checkout read-only"
    su "$user" -s /bin/sh -c "cd '$dir/src' && HOME='$home' make test" > "$OUT/nonroot-readonly-test.log" 2>&1 || status=$?
    log "nonroot-readonly: the grader's sandbox tests as $who"
    su "$user" -s /bin/sh -c "$grader" > "$OUT/nonroot-readonly-grader.log" 2>&1 || grader_status=$?
  else          # already unprivileged: the same, as this user
    who=$(id -un)
    log "nonroot-readonly: make test as $who, HOME=$home, the checkout read-only"
    (cd "$dir/src" && HOME="$home" make test) > "$OUT/nonroot-readonly-test.log" 2>&1 || status=$?
    log "nonroot-readonly: the grader's sandbox tests as $who"
    sh -c "$grader" > "$OUT/nonroot-readonly-grader.log" 2>&1 || grader_status=$?
  fi
  log "nonroot-readonly: make test (exit $status): $(tail -n 1 "$OUT/nonroot-readonly-test.log")"
  log "nonroot-readonly: grader sandbox tests (exit $grader_status): $(tail -n 1 "$OUT/nonroot-readonly-grader.log")"
  run=$(sed -n "s/^the course folder is read-only: this run's files go to //p" "$OUT/nonroot-readonly-test.log")
  [ -n "$run" ] || log "nonroot-readonly: FAILED: make test did not take the read-only checkout's way"
  finish_row nonroot-readonly "$(versions "$dir/src/.venv/bin/python"); make test and the grader's sandbox tests as $who: \
$([ "$status" = 0 ] && [ "$grader_status" = 0 ] && [ -n "$run" ] && echo passed || echo FAILED)" "$run/test-run"
}

log "matrix at $COMMIT: $ENVS (installs in $MATRIX_DIR)"
for env in $ENVS; do
  case $env in
    lock) lock_env ;; oldest) oldest_env ;; newest) newest_env ;; py312) py312_env ;; existing) existing_env ;;
    py313) root_python_env py313 trixie ;; py314) root_python_env py314 forky ;; debian12) debian12_env ;;
    uv) uv_env ;; colab) colab_env ;; kaggle) kaggle_env ;; nonroot-readonly) nonroot_readonly_env ;; nocjk) nocjk_env ;;
    *) log "unknown environment: $env (one of: $ALL_ENVS)"; exit 2 ;;
  esac
done
{
  echo "| environment | versions | date (commit) | unit tests (browser aside) | nbval cells (both editions + solutions) |"
  echo "|---|---|---|---|---|"
  for env in $ALL_ENVS; do [ -f "$OUT/$env.row" ] && cat "$OUT/$env.row"; done
} > "$OUT/summary.md"
cat "$OUT/summary.md"
! grep -qE "FAILED|did not run|install failed" "$OUT/summary.md"
