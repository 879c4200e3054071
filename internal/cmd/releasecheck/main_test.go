package main

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testConfig = `
project_name: terraform-provider-x
builds:
  - goos: [linux, windows, darwin]
    goarch: [amd64, "386"]
    ignore:
      - goos: darwin
        goarch: "386"
`

// fakeDist writes a snapshot as GoReleaser would for testConfig, then lets
// spoil break it; it returns the directory holding the config and dist/.
func fakeDist(t *testing.T, spoil func(dist string)) string {
	t.Helper()
	dir := t.TempDir()
	dist := filepath.Join(dir, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dist, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".goreleaser.yml"), []byte(testConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	write("metadata.json", `{"version": "1.2.3"}`)
	var sums strings.Builder
	writeZip := func(name, bin, content string) {
		f, _ := os.Create(filepath.Join(dist, name))
		z := zip.NewWriter(f)
		w, _ := z.Create(bin)
		_, _ = w.Write([]byte(content))
		_ = z.Close()
		_ = f.Close()
	}
	sum := func(name string) {
		b, _ := os.ReadFile(filepath.Join(dist, name))
		h := sha256.Sum256(b)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), name)
	}
	for _, p := range []string{"darwin_amd64", "linux_386", "linux_amd64", "windows_386", "windows_amd64"} {
		name := "terraform-provider-x_1.2.3_" + p + ".zip"
		bin := "terraform-provider-x_v1.2.3"
		if strings.HasPrefix(p, "windows") {
			bin += ".exe"
		}
		writeZip(name, bin, "binary")
		sum(name)
	}
	// The manifest stays where the repository has it; the sums list it by
	// its asset name.
	manifest := `{"version": 1, "metadata": {"protocol_versions": ["6.0"]}}`
	if err := os.WriteFile(filepath.Join(dir, "terraform-registry-manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte(manifest))
	fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), "terraform-provider-x_1.2.3_manifest.json")
	write("terraform-provider-x_1.2.3_SHA256SUMS", sums.String())
	if spoil != nil {
		spoil(dist)
	}
	return dir
}

// rezip replaces a platform's zip with one holding other content.
func rezip(dist, platform, bin string) {
	f, _ := os.Create(filepath.Join(dist, "terraform-provider-x_1.2.3_"+platform+".zip"))
	z := zip.NewWriter(f)
	w, _ := z.Create(bin)
	_, _ = w.Write([]byte("another build"))
	_ = z.Close()
	_ = f.Close()
}

func TestCheck(t *testing.T) {
	for name, tc := range map[string]struct {
		spoil func(dist string)
		want  string // "" for a pass
	}{
		"a snapshot as the registry takes it": {nil, ""},
		"a platform missing":                  {func(d string) { _ = os.Remove(filepath.Join(d, "terraform-provider-x_1.2.3_linux_386.zip")) }, "linux_386.zip"},
		"a zip changed after its sum":         {func(d string) { rezip(d, "linux_amd64", "terraform-provider-x_v1.2.3") }, "linux_amd64.zip is listed with"},
		"a zip without the binary":            {func(d string) { rezip(d, "linux_amd64", "README") }, "holds no terraform-provider-x_v1.2.3"},
		"a windows binary without .exe":       {func(d string) { rezip(d, "windows_amd64", "terraform-provider-x_v1.2.3") }, "holds no terraform-provider-x_v1.2.3.exe"},
		"protocol 5": {func(d string) {
			_ = os.WriteFile(filepath.Join(d, "..", "terraform-registry-manifest.json"), []byte(`{"version": 1, "metadata": {"protocol_versions": ["5.0"]}}`), 0o644)
		}, "want 1 and [6.0]"},
		"a zip for no platform": {func(d string) {
			_ = os.WriteFile(filepath.Join(d, "terraform-provider-x_1.2.3_plan9_amd64.zip"), nil, 0o644)
		}, "a zip for no platform"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := fakeDist(t, tc.spoil)
			got, err := check(filepath.Join(dir, ".goreleaser.yml"), filepath.Join(dir, "dist"), filepath.Join(dir, "terraform-registry-manifest.json"))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want a pass", err)
			case tc.want == "" && !strings.Contains(got, "5 platform zips"):
				t.Fatalf("summary %q", got)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
