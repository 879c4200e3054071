package main

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
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

// allPlatforms are the platforms testConfig builds.
var allPlatforms = []string{"darwin_amd64", "linux_386", "linux_amd64", "windows_386", "windows_amd64"}

// fakeDist writes a snapshot as GoReleaser would for testConfig, then lets
// spoil break it; it returns the directory holding the config and dist/.
func fakeDist(t *testing.T, spoil func(dist string)) string {
	t.Helper()
	return fakeDistOf(t, allPlatforms, spoil)
}

// fakeDistOf is fakeDist for a snapshot of the given platforms only.
func fakeDistOf(t *testing.T, platforms []string, spoil func(dist string)) string {
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
	for _, p := range platforms {
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
		"a platform missing": {func(d string) {
			_ = os.Remove(filepath.Join(d, "terraform-provider-x_1.2.3_linux_386.zip"))
		}, "linux_386.zip"},
		"a zip changed after its sum": {func(d string) {
			rezip(d, "linux_amd64", "terraform-provider-x_v1.2.3")
		}, "linux_amd64.zip is listed with"},
		"a zip without the binary": {func(d string) { rezip(d, "linux_amd64", "README") }, "holds no terraform-provider-x_v1.2.3"},
		"a windows binary without .exe": {func(d string) {
			rezip(d, "windows_amd64", "terraform-provider-x_v1.2.3")
		}, "holds no terraform-provider-x_v1.2.3.exe"},
		"protocol 5": {func(d string) {
			_ = os.WriteFile(filepath.Join(d, "..", "terraform-registry-manifest.json"),
				[]byte(`{"version": 1, "metadata": {"protocol_versions": ["5.0"]}}`), 0o644)
		}, "want 1 and [6.0]"},
		"a zip for no platform": {func(d string) {
			_ = os.WriteFile(filepath.Join(d, "terraform-provider-x_1.2.3_plan9_amd64.zip"), nil, 0o644)
		}, "a zip for no platform"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := fakeDist(t, tc.spoil)
			got, err := check(filepath.Join(dir, ".goreleaser.yml"), filepath.Join(dir, "dist"), filepath.Join(dir, "terraform-registry-manifest.json"), "")
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

func TestCheckSingleTarget(t *testing.T) {
	for name, tc := range map[string]struct {
		platforms []string
		only      string
		spoil     func(dist string)
		want      string // "" for a pass
	}{
		"a snapshot of one platform":                   {[]string{"linux_amd64"}, "linux_amd64", nil, ""},
		"a windows platform":                           {[]string{"windows_386"}, "windows_386", nil, ""},
		"the same snapshot checked as a full one":      {[]string{"linux_amd64"}, "", nil, "linux_386.zip"},
		"the platform's zip missing":                   {[]string{"linux_386"}, "linux_amd64", nil, "linux_amd64.zip"},
		"a platform the configuration does not build":  {[]string{"linux_amd64"}, "darwin_386", nil, "builds no darwin_386"},
		"a zip of every platform in a single snapshot": {allPlatforms, "linux_amd64", nil, "another platform than linux_amd64"},
		"a zip without the binary": {[]string{"linux_amd64"}, "linux_amd64",
			func(d string) { rezip(d, "linux_amd64", "README") }, "holds no terraform-provider-x_v1.2.3"},
		"a zip changed after its sum": {[]string{"linux_amd64"}, "linux_amd64",
			func(d string) { rezip(d, "linux_amd64", "terraform-provider-x_v1.2.3") }, "linux_amd64.zip is listed with"},
		"sums without the manifest": {[]string{"linux_amd64"}, "linux_amd64", func(d string) {
			sums := filepath.Join(d, "terraform-provider-x_1.2.3_SHA256SUMS")
			b, _ := os.ReadFile(sums)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			_ = os.WriteFile(sums, []byte(lines[0]+"\n"), 0o644)
		}, "does not list terraform-provider-x_1.2.3_manifest.json"},
		"protocol 5": {[]string{"linux_amd64"}, "linux_amd64", func(d string) {
			_ = os.WriteFile(filepath.Join(d, "..", "terraform-registry-manifest.json"),
				[]byte(`{"version": 1, "metadata": {"protocol_versions": ["5.0"]}}`), 0o644)
		}, "want 1 and [6.0]"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := fakeDistOf(t, tc.platforms, tc.spoil)
			got, err := check(
				filepath.Join(dir, ".goreleaser.yml"),
				filepath.Join(dir, "dist"),
				filepath.Join(dir, "terraform-registry-manifest.json"),
				tc.only,
			)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want a pass", err)
			case tc.want == "" && !strings.Contains(got, "the "+tc.only+" zip (single target; "):
				t.Fatalf("summary %q", got)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestWriteSingleTarget(t *testing.T) {
	const twoBuilds = `# a comment
project_name: terraform-provider-x
builds:
  - id: main
    goos: [linux, windows, darwin]
    goarch: [amd64, "386"]
    ignore:
      - goos: darwin
        goarch: "386"
    binary: "{{ .ProjectName }}_v{{ .Version }}"
  - id: arm-only
    goos: [linux]
    goarch: [arm64]
archives:
  - formats: [zip]
    name_template: "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}"
`
	dir := t.TempDir()
	config := filepath.Join(dir, ".goreleaser.yml")
	if err := os.WriteFile(config, []byte(twoBuilds), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "cache", "single.yml")
	for plat, skipped := range map[string]string{
		"windows_386": "arm-only",
		"linux_arm64": "main",
	} {
		t.Run(plat, func(t *testing.T) {
			if _, err := writeSingleTarget(config, plat, out); err != nil {
				t.Fatal(err)
			}
			got, err := readConfig(out)
			if err != nil {
				t.Fatal(err)
			}
			if p := got.platforms(); !slices.Equal(p, []string{plat}) {
				t.Fatalf("narrowed config builds %v, want %s alone", p, plat)
			}
			raw, _ := os.ReadFile(out)
			var narrowed struct {
				Builds []struct {
					ID     string `yaml:"id"`
					Skip   string `yaml:"skip"`
					Binary string `yaml:"binary"`
				} `yaml:"builds"`
				Archives []struct {
					NameTemplate string `yaml:"name_template"`
				} `yaml:"archives"`
			}
			if err := yaml.Unmarshal(raw, &narrowed); err != nil {
				t.Fatal(err)
			}
			for _, b := range narrowed.Builds {
				if (b.ID == skipped) != (b.Skip == "true") {
					t.Errorf("build %s: skip %q; want only %s skipped", b.ID, b.Skip, skipped)
				}
			}
			if narrowed.Builds[0].Binary != "{{ .ProjectName }}_v{{ .Version }}" ||
				narrowed.Archives[0].NameTemplate != "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}" {
				t.Fatalf("names changed:\n%s", raw)
			}
		})
	}
	if _, err := writeSingleTarget(config, "darwin_386", out); err == nil || !strings.Contains(err.Error(), "builds no darwin_386") {
		t.Fatalf("error %v, want one saying the configuration builds no darwin_386", err)
	}
	// A matrix given as targets would be read as no platforms at all.
	withTargets := strings.Replace(twoBuilds, "  - id: arm-only\n", "  - id: arm-only\n    targets: [linux_arm64]\n", 1)
	if err := os.WriteFile(config, []byte(withTargets), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeSingleTarget(config, "linux_arm64", out); err == nil || !strings.Contains(err.Error(), "build 2 lists targets") {
		t.Fatalf("error %v, want one saying build 2 lists targets", err)
	}
}

// The repository's own configuration: the 13 platforms the README and the
// Makefile name, each of which a single-target snapshot can be narrowed to.
func TestRepositoryConfig(t *testing.T) {
	config := filepath.Join("..", "..", "..", ".goreleaser.yml")
	cfg, err := readConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	all := cfg.platforms()
	if len(all) != 13 {
		t.Fatalf(".goreleaser.yml builds %d platforms (%v); the Makefile and README.md say 13", len(all), all)
	}
	out := filepath.Join(t.TempDir(), "single.yml")
	for _, plat := range all {
		if _, err := writeSingleTarget(config, plat, out); err != nil {
			t.Fatal(err)
		}
		narrowed, err := readConfig(out)
		if err != nil {
			t.Fatal(err)
		}
		if p := narrowed.platforms(); !slices.Equal(p, []string{plat}) {
			t.Fatalf("narrowed to %s, the config builds %v", plat, p)
		}
	}
}
