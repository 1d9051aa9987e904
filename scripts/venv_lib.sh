# Sourced (never run) by scripts/setup_*_venv.sh: the part every side virtualenv's script shares.
# Each of those venvs holds something that cannot live beside .venv (a pinned gymnasium, mcp < 2,
# a capped transformers, ...); the scripts differ only in what they install and which tests they run,
# so the command line, the stamp that makes a second run free and the messages are kept here, once.
#
# A script reads:
#   source "$(dirname "${BASH_SOURCE[0]}")/venv_lib.sh"
#   venv_init SLUG "$@"                 # [--no-test] [VENV_DIR]; the venv defaults to .venv-SLUG
#   install() { "${venv_pip[@]}" ...; }   # what goes into the venv, run in a fresh or stale one
#   venv_install_once install [FILE...]   # FILEs (repository-relative) join the stamp's hash
#   venv_pytest DIR [PYTEST ARGS...]      # unless --no-test: pytest in the venv, from DIR

# venv_paths SLUG [VENV_DIR]: repo_root, venv (default .venv-SLUG at the repository root), python
# (PYTHON, else python3) and venv_prog, the name messages begin with (the script's, setup_SLUG_venv).
venv_paths() {
    local slug=$1
    venv_prog="setup_${slug//-/_}_venv"
    repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    venv="${2:-$repo_root/.venv-$slug}"
    python="${PYTHON:-python3}"
    venv_pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
}

# venv_init SLUG [--no-test] [VENV_DIR]: venv_paths, plus run_tests (0 after --no-test) and the stamp
# file inside the venv.
venv_init() {
    local slug=$1
    shift
    run_tests=1
    if [ "${1:-}" = "--no-test" ]; then run_tests=0; shift; fi
    venv_paths "$slug" "${1:-}"
    stamp="$venv/.ragen-bench-$slug-installed"
}

# venv_install_once INSTALL [FILE...]: create the venv if it has no python, run the function INSTALL and
# write the stamp; skipped, saying so, while the stamp matches the hash of pyproject.toml, the FILEs,
# the calling script and this file (a change to any of them can change what the venv should hold).
venv_install_once() {
    local install=$1 wanted
    shift
    local hashed=("$repo_root/pyproject.toml")
    local file
    for file in "$@"; do hashed+=("$repo_root/$file"); done
    wanted="$(cat "${hashed[@]}" "${BASH_SOURCE[-1]}" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
    if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
        echo "$venv_prog: $venv is up to date"
        return 0
    fi
    test -x "$venv/bin/python" || "$python" -m venv "$venv"
    "$install"
    echo "$wanted" > "$stamp"
}

# venv_pytest DIR [ARGS...]: unless --no-test was given, run pytest in the venv from DIR (relative to the
# repository root), quietly and without a cache folder, as every side venv's tests are run.
venv_pytest() {
    local dir=$1
    shift
    if [ "$run_tests" = 1 ]; then
        cd "$repo_root/$dir"
        "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
    fi
}
