#!/usr/bin/env bash
# `make test` step: `terraform fmt -check` and `terraform validate` of every configuration under examples/
# (the provider's snippets, the modules, the lab) against the provider built from this tree, through a
# dev_overrides CLI config. Nothing is downloaded: a configuration that declares vSphere provider (vmware/vsphere)
# objects cannot be installed here, so it is only formatted and listed as such; one that only refers to them
# (vsphere_virtual_machine.node.id) is validated with each of them stubbed (stub_vsphere_references).
#
# Needs TERRAFORM (absolute path; the Makefile sets it) and Go.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
: "${TERRAFORM:?set TERRAFORM to an absolute terraform path}"
export CHECKPOINT_DISABLE=1 TF_INPUT=0

tmp="$(mktemp -d "${TMPDIR:-/tmp}/vspherehpc-validate.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/providers/terraform-provider-vspherehpc" .
cat >"$tmp/dev.tfrc" <<TFRC
provider_installation {
  dev_overrides {
    "vspherehpc/vspherehpc" = "$tmp/providers"
  }
  direct {}
}
TFRC
export TF_CLI_CONFIG_FILE="$tmp/dev.tfrc"

# A copy, so no .terraform/ lands in the tree and relative module sources still resolve.
tar -C examples --exclude='.terraform' --exclude='.terraform.lock.hcl' --exclude='*.tfstate*' -cf - . |
  tar -C "$tmp" -xf - --one-top-level=examples

# Declares, or refers to (outside comments and strings), a vsphere_* resource or data source.
needs_vsphere_provider() {
  compgen -G "$1/*.tf" >/dev/null || return 1
  grep -qsE '^(resource|data) "vsphere_|source += "(vmware|hashicorp)/vsphere"' "$1"/*.tf && return 0
  sed -E 's/#.*$//; s/"([^"\\]|\\.)*"//g' "$1"/*.tf | grep -qE '(^|[^.a-z_])(data\.)?vsphere_[a-z_]+\.[a-z_]'
}

# Declares a vsphere_* resource or data source, or the vSphere provider itself.
declares_vsphere() {
  grep -qsE '^(resource|data) "vsphere_|source += "(vmware|hashicorp)/vsphere"' "$1"/*.tf
}

# Replaces each reference to a vSphere provider object (vsphere_T.N, data.vsphere_T.N) by a terraform_data of its
# own (built into Terraform, nothing to install), declared in zz_vsphere_stubs.tf: its output is of dynamic type, so
# any attribute of it validates, and everything else in the configuration is checked as usual.
stub_vsphere_references() {
  local dir="$1" ref kind type name stub prefix
  while IFS= read -r ref; do
    kind=resource prefix=""
    if [[ $ref == data.* ]]; then
      kind=data prefix='data\.'
      ref="${ref#data.}"
    fi
    type="${ref%%.*}" name="${ref#*.}"
    stub="vsphere_stub_${kind}_${type#vsphere_}_${name}"
    printf 'resource "terraform_data" "%s" {}\n' "$stub" >>"$dir/zz_vsphere_stubs.tf"
    sed -i -E "s/(^|[^.a-z_])${prefix}${type}\.${name}\.([a-z_])/\1terraform_data.${stub}.output.\2/g; s/(^|[^.a-z_])${prefix}${type}\.${name}([^.a-z0-9_-]|$)/\1terraform_data.${stub}\2/g" "$dir"/*.tf
  done < <(sed -E 's/#.*$//; s/"([^"\\]|\\.)*"//g' "$dir"/*.tf | grep -oE '(^|[^.a-z_])(data\.)?vsphere_[a-z_]+\.[a-z_][a-z0-9_-]*' | sed -E 's/^[^a-z]//' | sort -u)
}

# Provider functions (examples/functions) exist from Terraform 1.8, import blocks by identity from 1.12, list
# resources, query files and actions from 1.14, an action trigger's on_failure and destroy events from 1.16: an older
# terraform leaves those out. (Query files are formatted by terraform fmt from 1.15.)
tf_version="$("$TERRAFORM" version -json | sed -n 's/.*"terraform_version": *"\([0-9.]*\).*/\1/p')"
at_least() { [[ "$(printf '%s\n%s\n' "$tf_version" "$1" | sort -V | head -n1)" == "$1" ]]; }
functions_ok=true identity_ok=true query_ok=true actions116_ok=true
at_least 1.8.0 || functions_ok=false
at_least 1.12.0 || identity_ok=false
at_least 1.14.0 || query_ok=false
at_least 1.16.0 || actions116_ok=false
too_new=()

# An identity import block targets the resource its directory's import-by-string-id.tf imports too: it is
# validated with resource.tf alone, in a directory of its own.
while IFS= read -r f; do
  dir="$(dirname "$f")"
  if [[ $identity_ok == true ]]; then
    mkdir -p "$dir/identity"
    mv "$f" "$dir/identity/"
    cp "$dir/resource.tf" "$dir/identity/"
  else
    rm "$f"
    too_new+=("examples/${f#"$tmp/examples/"}")
  fi
done < <(find "$tmp/examples" -name import-by-identity.tf)

validated=0 formatted_only=() stubbed=()
while IFS= read -r dir; do
  rel="examples/${dir#"$tmp/examples/"}"
  [[ $dir == "$tmp/examples" ]] && rel="examples"
  if [[ $functions_ok == false ]] && grep -qs 'provider::' "$dir"/*.tf; then
    too_new+=("$rel") # not even formatted: this terraform cannot parse a provider function call
    continue
  fi
  if [[ $query_ok == false ]] && { compgen -G "$dir/*.tfquery.hcl" >/dev/null || grep -qs '^action "' "$dir"/*.tf; }; then
    too_new+=("$rel") # query files and actions ask for Terraform 1.14
    continue
  fi
  if [[ $actions116_ok == false ]] && grep -qsE '^[[:space:]]*on_failure[[:space:]]*=|(before|after)_destroy' "$dir"/*.tf; then
    too_new+=("$rel") # an action trigger's on_failure and destroy events ask for Terraform 1.16
    continue
  fi
  "$TERRAFORM" fmt -check -diff "$dir" >&2 || { echo "terraform fmt: $rel is not formatted (run make fmt)" >&2; exit 1; }
  if needs_vsphere_provider "$dir"; then
    if declares_vsphere "$dir"; then
      formatted_only+=("$rel")
      continue
    fi
    stub_vsphere_references "$dir"
    stubbed+=("$rel")
  fi
  (
    cd "$dir"
    # The registry pages show snippets without a terraform block; a real root module has one.
    if ! grep -qs 'required_providers' ./*.tf; then
      printf 'terraform {\n  required_providers {\n    vspherehpc = {\n      source = "vspherehpc/vspherehpc"\n    }\n  }\n}\n' >zz_required_providers.tf
    fi
    if grep -qsE '^module "' ./*.tf; then
      "$TERRAFORM" get >/dev/null # local module sources only: no network
    fi
    query=()
    [[ $query_ok == true ]] && query=(-query)
    out="$("$TERRAFORM" validate -no-color "${query[@]}" 2>&1)" || { echo "$out" >&2; echo "terraform validate failed in $rel" >&2; exit 1; }
  )
  validated=$((validated + 1))
done < <(find "$tmp/examples" \( -name '*.tf' -o -name '*.tfquery.hcl' \) -not -path '*/.terraform/*' -printf '%h\n' | sort -u)

echo "terraform validate: $validated configurations valid"
if ((${#stubbed[@]})); then
  echo "validated with their vSphere provider references stubbed: ${stubbed[*]}"
fi
if ((${#formatted_only[@]})); then
  echo "formatted only (they need the vmware/vsphere provider, which cannot be installed offline): ${formatted_only[*]}"
fi
if ((${#too_new[@]})); then
  echo "neither formatted nor validated (provider functions, identity imports, query files, actions or their 1.16 triggers, newer than Terraform $tf_version): ${too_new[*]}"
fi
