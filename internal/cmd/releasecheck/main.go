// Command releasecheck checks a GoReleaser snapshot (dist/) against what the
// Terraform Registry takes (developer.hashicorp.com/terraform/registry/
// providers/publishing): a zip per platform the configuration builds, named
// terraform-provider-<name>_<version>_<os>_<arch>.zip and holding
// terraform-provider-<name>_v<version>; a _SHA256SUMS file that matches every
// zip and the manifest; a _manifest.json naming plugin protocol 6.0.
//
// The manifest is a release asset GoReleaser uploads from the repository
// (release.extra_files) and lists in the sums (checksum.extra_files); a
// snapshot does not copy it into dist/, so it is read from where it comes
// from.
//
// A snapshot of every platform takes most of a cold CI run, so CI builds one:
// `goreleaser release` has no --single-target (only `goreleaser build` has,
// and builds no zips or sums), so -write-single-target-config writes the
// configuration with its build matrix narrowed to one platform of it (this
// machine's unless -platform says otherwise), for `goreleaser release -f`.
// -single-target then checks dist/ as that snapshot: the one platform's zip,
// no other, and the sums and manifest as above. The platform must be one the
// full configuration builds.
//
// Usage:
//
//	releasecheck [-config .goreleaser.yml] [-dist dist] [-manifest terraform-registry-manifest.json] [-single-target [-platform os_arch]]
//	releasecheck -write-single-target-config out.yml [-config .goreleaser.yml] [-platform os_arch]
package main

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

func main() {
	config := flag.String("config", ".goreleaser.yml", "GoReleaser configuration")
	dist := flag.String("dist", "dist", "GoReleaser's output directory")
	manifest := flag.String("manifest", "terraform-registry-manifest.json", "the registry manifest the release uploads")
	single := flag.Bool("single-target", false, "dist/ is a snapshot of -platform alone, made with the configuration -write-single-target-config wrote")
	plat := flag.String("platform", runtime.GOOS+"_"+runtime.GOARCH, "the os_arch of -single-target and -write-single-target-config")
	narrowed := flag.String(
		"write-single-target-config",
		"",
		"write -config with its build matrix narrowed to -platform to this file, and check nothing",
	)
	flag.Parse()
	var (
		checked string
		err     error
	)
	switch {
	case *narrowed != "":
		checked, err = writeSingleTarget(*config, *plat, *narrowed)
	case *single:
		checked, err = check(*config, *dist, *manifest, *plat)
	default:
		checked, err = check(*config, *dist, *manifest, "")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
	fmt.Println(checked)
}

type goreleaserConfig struct {
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		Goos    []string   `yaml:"goos"`
		Goarch  []string   `yaml:"goarch"`
		Ignore  []platform `yaml:"ignore"`
		Skip    string     `yaml:"skip"`
		Targets []string   `yaml:"targets"`
	} `yaml:"builds"`
}

type platform struct {
	Goos   string `yaml:"goos"`
	Goarch string `yaml:"goarch"`
}

// platforms are the os_arch pairs the configuration builds.
func (c goreleaserConfig) platforms() []string {
	var out []string
	for i := range c.Builds {
		out = append(out, c.buildPlatforms(i)...)
	}
	slices.Sort(out)
	return out
}

// buildPlatforms are the os_arch pairs build i builds (none when it is
// skipped as writeSingleTarget skips it).
func (c goreleaserConfig) buildPlatforms(i int) []string {
	b := c.Builds[i]
	if b.Skip == "true" {
		return nil
	}
	var out []string
	for _, goos := range b.Goos {
		for _, goarch := range b.Goarch {
			if !slices.Contains(b.Ignore, platform{goos, goarch}) {
				out = append(out, goos+"_"+goarch)
			}
		}
	}
	return out
}

func readConfig(path string) (goreleaserConfig, error) {
	var cfg goreleaserConfig
	raw, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	for i, b := range cfg.Builds {
		if len(b.Targets) > 0 {
			return cfg, fmt.Errorf("%s: build %d lists targets; releasecheck reads the matrix from goos, goarch and ignore only", path, i+1)
		}
	}
	return cfg, nil
}

// writeSingleTarget writes the configuration at configPath to out with each
// build that builds plat narrowed to plat alone (goos and goarch of one
// entry each; its ignore list stays and ignores nothing more) and every other
// build skipped. Everything else (archives, checksums, names) is left as it
// is, so that the snapshot names what the full release names.
func writeSingleTarget(configPath, plat, out string) (string, error) {
	cfg, err := readConfig(configPath)
	if err != nil {
		return "", err
	}
	if !slices.Contains(cfg.platforms(), plat) {
		return "", fmt.Errorf("%s builds no %s (it builds %s): a single-target snapshot must be of one of its platforms",
			configPath, plat, strings.Join(cfg.platforms(), ", "))
	}
	goos, goarch, _ := strings.Cut(plat, "_")
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", configPath, err)
	}
	builds := mappingValue(doc.Content[0], "builds")
	if builds == nil || builds.Kind != yaml.SequenceNode || len(builds.Content) != len(cfg.Builds) {
		return "", fmt.Errorf("%s: no builds list", configPath)
	}
	for i, b := range builds.Content {
		if slices.Contains(cfg.buildPlatforms(i), plat) {
			setMapping(b, "goos", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{strNode(goos)}})
			setMapping(b, "goarch", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{strNode(goarch)}})
		} else {
			setMapping(b, "skip", strNode("true"))
		}
	}
	narrowed, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	header := fmt.Sprintf("# %s with its builds narrowed to %s by internal/cmd/releasecheck; not for releases.\n", configPath, plat)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(out, append([]byte(header), narrowed...), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %s narrowed to %s (1 of its %d platforms)", out, configPath, plat, len(cfg.platforms())), nil
}

// mappingValue is the value of key in the mapping node m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setMapping sets key to v in the mapping node m, replacing a value it has.
func setMapping(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, strNode(key), v)
}

// strNode is a quoted string scalar ("386" stays a string).
func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
}

// check returns a one-line summary of what it checked, or what is wrong. With
// only set (an os_arch of the configuration), dist/ is a snapshot of that
// platform alone, as -write-single-target-config narrows it.
func check(configPath, dist, manifestSource, only string) (string, error) {
	cfg, err := readConfig(configPath)
	if err != nil {
		return "", err
	}
	platforms := cfg.platforms()
	if only != "" {
		if !slices.Contains(platforms, only) {
			return "", fmt.Errorf("%s builds no %s (it builds %s)", configPath, only, strings.Join(platforms, ", "))
		}
		platforms = []string{only}
	}
	var meta struct {
		Version string `json:"version"`
	}
	if err := readJSON(filepath.Join(dist, "metadata.json"), &meta); err != nil {
		return "", err
	}
	prefix := cfg.ProjectName + "_" + meta.Version
	var problems []string
	sums := map[string]string{} // asset name -> its file
	for _, p := range platforms {
		name := prefix + "_" + p + ".zip"
		binary := cfg.ProjectName + "_v" + meta.Version
		if strings.HasPrefix(p, "windows_") {
			binary += ".exe"
		}
		if err := zipHolds(filepath.Join(dist, name), binary); err != nil {
			problems = append(problems, err.Error())
		}
		sums[name] = filepath.Join(dist, name)
	}
	zips, _ := filepath.Glob(filepath.Join(dist, "*.zip"))
	for _, z := range zips {
		if _, ok := sums[filepath.Base(z)]; !ok {
			if only != "" {
				problems = append(problems, filepath.Base(z)+": a zip for another platform than "+only+" in a single-target snapshot")
			} else {
				problems = append(problems, filepath.Base(z)+": a zip for no platform of the configuration")
			}
		}
	}
	manifest := prefix + "_manifest.json"
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := readJSON(manifestSource, &m); err != nil {
		problems = append(problems, err.Error())
	} else if m.Version != 1 || !slices.Equal(m.Metadata.ProtocolVersions, []string{"6.0"}) {
		problems = append(problems, fmt.Sprintf("%s: version %d, protocols %v; want 1 and [6.0]", manifest, m.Version, m.Metadata.ProtocolVersions))
	}
	sums[manifest] = manifestSource
	problems = append(problems, checkSums(filepath.Join(dist, prefix+"_SHA256SUMS"), sums)...)
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "\n"))
	}
	zipsChecked := fmt.Sprintf("%d platform zips", len(sums)-1)
	if only != "" {
		zipsChecked = fmt.Sprintf("the %s zip (single target; %s builds %d platforms)", only, configPath, len(cfg.platforms()))
	}
	return fmt.Sprintf("%s: %s, %s_SHA256SUMS and %s match what the Terraform Registry takes",
		meta.Version, zipsChecked, prefix, manifest), nil
}

// zipHolds checks that the zip exists and holds the binary.
func zipHolds(path, binary string) error {
	z, err := zip.OpenReader(path)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	defer z.Close()
	for _, f := range z.File {
		if f.Name == binary {
			return nil
		}
	}
	return fmt.Errorf("%s holds no %s", filepath.Base(path), binary)
}

// checkSums checks that the sums file lists exactly the assets of want, each
// with its file's SHA-256.
func checkSums(path string, want map[string]string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: malformed line %q", filepath.Base(path), line))
			continue
		}
		listed[name] = true
		file, ok := want[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s lists %s, which is no asset of the release", filepath.Base(path), name))
			continue
		}
		if got, err := sha256File(file); err != nil || got != sum {
			problems = append(problems, fmt.Sprintf("%s: %s is listed with %s, has %s (%v)", filepath.Base(path), name, sum, got, err))
		}
	}
	for name := range want {
		if !listed[name] {
			problems = append(problems, fmt.Sprintf("%s does not list %s", filepath.Base(path), name))
		}
	}
	return problems
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
