package provider

// Terraform run as a user runs it, for what terraform-plugin-testing cannot
// drive: its state shim reads no for_each instances, and no moved blocks or
// state from another configuration. The provider is built from this tree and
// installed through a dev_overrides CLI configuration; the lab runs in this
// process, on 127.0.0.1.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// builtProvider is the directory holding the provider binary built from this
// tree, once per test binary; TestMain removes it.
var builtProvider = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "vspherehpc-provider-")
	if err != nil {
		return "", err
	}
	builtProviderDir.Store(dir)
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "terraform-provider-vspherehpc"), ".")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return dir, nil
})

var builtProviderDir atomic.Value // string

func TestMain(m *testing.M) {
	code := runExternal(m)
	if code == 0 {
		if err := checkPrivilegesGuide(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if dir, ok := builtProviderDir.Load().(string); ok {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// tfDir is a working directory where Terraform runs against a lab.
type tfDir struct {
	t         *testing.T
	dir       string
	terraform string
	env       []string
	vars      []string // -var arguments the configuration needs, for the cleanup's destroy
}

// newTFDir makes a working directory with the given files (name -> content)
// and a CLI configuration that installs the provider built from this tree.
func newTFDir(t *testing.T, lab *vcsimlab.Lab, files map[string]string) *tfDir {
	t.Helper()
	providers, err := builtProvider()
	if err != nil {
		t.Fatalf("building the provider: %v", err)
	}
	dir := t.TempDir()
	rc := filepath.Join(dir, ".terraformrc")
	// Both addresses: test configurations name registry.terraform.io, where
	// OpenTofu reads "vspherehpc/vspherehpc" as registry.opentofu.org's.
	acctest.Must(t, os.WriteFile(rc, []byte(`provider_installation {
  dev_overrides {
    "vspherehpc/vspherehpc" = "`+providers+`"
    "registry.terraform.io/vspherehpc/vspherehpc" = "`+providers+`"
  }
  direct {}
}
`), 0o600))
	terraform, err := acctest.TerraformPath()
	if err != nil {
		t.Fatal("no terraform: set TF_ACC_TERRAFORM_PATH (make test does) or put terraform on PATH")
	}
	d := &tfDir{t: t, dir: dir, terraform: terraform, env: append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1", "TF_CLI_ARGS=-no-color",
		"VSPHERE_SERVER="+lab.URL.Host, "VSPHERE_USER="+lab.Username, "VSPHERE_PASSWORD="+lab.Password,
		"VSPHERE_CA_FILE="+lab.CertFile,
	)}
	if lab.CertFile == "" { // an external vCenter whose certificate is not verified
		d.env = append(d.env, "VSPHERE_ALLOW_UNVERIFIED_SSL=true")
	}
	d.write(files)
	if !lab.Simulated() {
		// A failed test must not leave what it made on a vCenter that
		// outlives it.
		t.Cleanup(func() {
			if _, err := os.Stat(filepath.Join(d.dir, "terraform.tfstate")); err != nil {
				return
			}
			if out, err := d.try(append([]string{"destroy", "-auto-approve", "-input=false"}, d.vars...)...); err != nil {
				t.Errorf("terraform destroy after the test: %v\n%s", err, out)
			}
		})
	}
	return d
}

// write (over)writes files of the working directory.
func (d *tfDir) write(files map[string]string) {
	d.t.Helper()
	for name, content := range files {
		path := filepath.Join(d.dir, name)
		acctest.Must(d.t, os.MkdirAll(filepath.Dir(path), 0o755))
		acctest.Must(d.t, os.WriteFile(path, []byte(content), 0o600))
	}
}

// copyModule copies a module of examples/modules into the working directory,
// as modules/<name>: a local module source must be a relative path.
func (d *tfDir) copyModule(name string) {
	d.t.Helper()
	src := filepath.Join("../../examples/modules", name)
	entries, err := os.ReadDir(src)
	acctest.Must(d.t, err)
	files := map[string]string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tf") {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			acctest.Must(d.t, err)
			files[filepath.Join("modules", name, e.Name())] = string(b)
		}
	}
	d.write(files)
}

// run runs terraform with args and returns its output; a failure fails the
// test.
func (d *tfDir) run(args ...string) string {
	d.t.Helper()
	out, err := d.try(args...)
	if err != nil {
		d.t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs terraform with args and returns its output, without the frame
// Terraform draws around diagnostics (so wrapped text matches), and its
// error.
func (d *tfDir) try(args ...string) (string, error) {
	cmd := exec.Command(d.terraform, args...)
	cmd.Dir, cmd.Env = d.dir, d.env
	out, err := cmd.CombinedOutput()
	return strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(string(out)), err
}

// plannedChange is one resource instance's planned actions.
type plannedChange struct {
	Address string   `json:"address"`
	Actions []string `json:"actions"`
}

// plan plans with args and returns the changes to managed resources that do
// something (no no-ops, no data source reads).
func (d *tfDir) plan(args ...string) []plannedChange {
	d.t.Helper()
	changes, _ := d.planSaying(args...)
	return changes
}

// planSaying is plan, also returning what the plan said (its warnings are
// not in the saved plan).
func (d *tfDir) planSaying(args ...string) ([]plannedChange, string) {
	d.t.Helper()
	said := d.run(append([]string{"plan", "-out=tfplan"}, args...)...)
	var p struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Mode    string `json:"mode"`
			Change  struct {
				Actions []string `json:"actions"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	acctest.Must(d.t, json.Unmarshal([]byte(d.run("show", "-json", "tfplan")), &p))
	var out []plannedChange
	for _, rc := range p.ResourceChanges {
		if rc.Mode == "managed" && !slices.Equal(rc.Change.Actions, []string{"no-op"}) {
			out = append(out, plannedChange{Address: rc.Address, Actions: rc.Change.Actions})
		}
	}
	return out, said
}

// output is an output value, decoded from terraform output -json.
func (d *tfDir) output(name string, v any) {
	d.t.Helper()
	acctest.Must(d.t, json.Unmarshal([]byte(d.run("output", "-json", name)), v))
}

// editState rewrites the working directory's state, as an older release
// would have written it: edit sees each resource's address (type.name) and
// each of its instances (attributes, private, schema_version, ...), as
// decoded JSON.
func (d *tfDir) editState(edit func(address string, instance map[string]any)) {
	d.t.Helper()
	var state map[string]any
	acctest.Must(d.t, json.Unmarshal([]byte(d.read("terraform.tfstate")), &state))
	for _, r := range state["resources"].([]any) {
		r := r.(map[string]any)
		for _, inst := range r["instances"].([]any) {
			edit(r["type"].(string)+"."+r["name"].(string), inst.(map[string]any))
		}
	}
	b, err := json.Marshal(state)
	acctest.Must(d.t, err)
	d.write(map[string]string{"terraform.tfstate": string(b)})
}

// setPrivate sets an instance's private state to keys, as the framework
// stores its provider's: a JSON object of base64 values.
func setPrivate(t *testing.T, instance map[string]any, keys map[string][]byte) {
	t.Helper()
	private, err := json.Marshal(keys)
	acctest.Must(t, err)
	instance["private"] = base64.StdEncoding.EncodeToString(private)
}

// read is the content of a file of the working directory.
func (d *tfDir) read(name string) string {
	d.t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dir, name))
	acctest.Must(d.t, err)
	return string(b)
}
