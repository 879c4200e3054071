# Installs the provider the way a machine without the Registry does: from a filesystem mirror holding the release
# zip that `make release-check` builds into dist/, with no dev_overrides; then `terraform init` (offline: every
# other source is excluded) and an apply of data sources against the lab simulator, which only a working plugin
# answers. Run by `make install-check` after `make release-check`; the getting-started guide documents the same
# steps ("Installing without the Registry").
#
# Needs dist/ with one terraform-provider-vspherehpc_<version>_<os>_<arch>.zip for this machine.

LAB_SCRIPT="install-check"
# shellcheck source=scripts/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/lab.sh"

target="$(go env GOOS)_$(go env GOARCH)"
shopt -s nullglob
zips=("$repo_root"/dist/terraform-provider-vspherehpc_*_"$target".zip)
shopt -u nullglob
[[ ${#zips[@]} -eq 1 ]] || fail "want one release zip for $target in dist/ (make release-check builds it), found ${#zips[@]}"
zip="${zips[0]}"
version="$(basename "$zip" "_$target.zip")"
version="${version#terraform-provider-vspherehpc_}"
# Terraform reads a snapshot's version (0.0.0-SNAPSHOT-1a2b3c4) in lower case, and matches constraints as written.
version="${version,,}"

header "a filesystem mirror with $(basename "$zip")"
# The packed layout: HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_TARGET.zip, as Terraform's CLI
# configuration documents filesystem_mirror.
mirror="$tmp/mirror/registry.terraform.io/vspherehpc/vspherehpc"
mkdir -p "$mirror"
cp "$zip" "$mirror/"
find "$tmp/mirror" -type f

start_lab
# start_lab points Terraform at a dev_overrides build; this check installs the release instead.
cat >"$tmp/mirror.tfrc" <<EOF
provider_installation {
  filesystem_mirror {
    path    = "$tmp/mirror"
    include = ["registry.terraform.io/vspherehpc/vspherehpc"]
  }
}
EOF
export TF_CLI_CONFIG_FILE="$tmp/mirror.tfrc"

work="$tmp/install"
mkdir -p "$work"
cat >"$work/main.tf" <<EOF
terraform {
  required_providers {
    vspherehpc = {
      source  = "vspherehpc/vspherehpc"
      version = "$version"
    }
  }
}

# vsphere_server, user, password and the lab's CA come from the lab's VSPHERE_* variables.
provider "vspherehpc" {}

data "vspherehpc_datacenter" "dc" {
  name = "$VSPHERE_LAB_DATACENTER"
}

data "vspherehpc_cluster" "c" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "$VSPHERE_LAB_CLUSTER"
}

output "hosts" {
  value = length(data.vspherehpc_cluster.c.host_names)
}
EOF

header "terraform init from the mirror (no dev_overrides, no Registry)"
tf -chdir="$work" init -no-color | tee "$tmp/init.log"
grep -q "Installed vspherehpc/vspherehpc v$version" "$tmp/init.log" ||
  fail "terraform init did not install vspherehpc/vspherehpc v$version from the mirror"
grep -q "dev_overrides\|Provider development overrides" "$tmp/init.log" && fail "terraform init used dev_overrides"
[[ -f "$work/.terraform.lock.hcl" ]] || fail "terraform init wrote no .terraform.lock.hcl"
grep -q 'version *= *"'"$version"'"' "$work/.terraform.lock.hcl" || fail "the lock file does not record v$version"

header "terraform apply: the installed plugin reads the lab"
tf -chdir="$work" apply -auto-approve -no-color
hosts="$(tf -chdir="$work" output -raw hosts)"
[[ "$hosts" -ge 1 ]] || fail "the cluster's hosts read through the installed plugin: $hosts"
echo "installed v$version from a filesystem mirror; it read $hosts hosts of cluster $VSPHERE_LAB_CLUSTER"
