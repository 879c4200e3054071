#!/usr/bin/env bash
# `make testacc-external-lab`: start the lab command as a separate process, the path a real vCenter takes, and run
# `make testacc-external` against it with the VSPHERE_* and VSPHERE_TEST_* variables the lab prints. The run fails
# when a test leaves the lab changed.
set -euo pipefail

LAB_SCRIPT=testacc-external-lab
# shellcheck source=lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/lab.sh"

start_lab -hosts 3 -vms 2
# The acceptance tests install the provider themselves; the lab's CLI config is for the demo.
unset TF_CLI_CONFIG_FILE
header "make testacc-external against the lab command (hosts ${VSPHERE_TEST_HOSTS}, VMs ${VSPHERE_TEST_VMS})"
make --no-print-directory testacc-external TERRAFORM="$TERRAFORM"
