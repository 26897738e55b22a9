#!/bin/sh
# The install steps of every hpcdet training image, run as root inside the image's root file
# system: singularity/hpcdet.def's %post runs it for Apptainer, scripts/build-image runs it
# with ch-run for the Charliecloud (and podman --rootfs) directory image.
#
#   TORCH_SPEC      the torch to install (default torch==2.13.0, as scripts/bootstrap's)
#   TORCH_INDEX_URL where torch comes from (default PyPI; e.g. .../whl/cpu)
#   HPCDET_SPEC     hpcdet with its extras (default: the source copied to /opt/hpcdet/src)
#   WHEELHOUSE      install from this directory of wheels only, with no index (offline)
set -eu
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
TORCH_INDEX_URL=${TORCH_INDEX_URL:-https://pypi.org/simple}
HPCDET_SPEC=${HPCDET_SPEC:-/opt/hpcdet/src[train,examples]}
# Debian's python3 is "externally managed" (PEP 668): the image is ours, install into it.
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
    PIP_BREAK_SYSTEM_PACKAGES=1
if [ -n "${WHEELHOUSE:-}" ]; then
    set -- --no-index --find-links "$WHEELHOUSE"
    torch_from=$*
else
    set --
    torch_from="--index-url $TORCH_INDEX_URL"
fi
# torch first, from its own index; the [train] extra's "torch>=2.1" is then satisfied and
# pip leaves that build alone. ([examples] adds scikit-learn, so examples/digits runs.)
# shellcheck disable=SC2086  # torch_from is a list of options
python3 -m pip install $torch_from "$TORCH_SPEC"
python3 -m pip install "$@" "$HPCDET_SPEC"
# Fail the build, not the first job, if something does not import.
python3 -c "import torch, hpcdet.core, hpcdet.harness.main; print('torch', torch.__version__)"
# A file only the image has: a job can tell it runs inside (tests/integration look for it).
printf 'hpcdet training image\n' > /etc/hpcdet-image
