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
// Usage: releasecheck [-config .goreleaser.yml] [-dist dist] [-manifest terraform-registry-manifest.json]
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
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

func main() {
	config := flag.String("config", ".goreleaser.yml", "GoReleaser configuration")
	dist := flag.String("dist", "dist", "GoReleaser's output directory")
	manifest := flag.String("manifest", "terraform-registry-manifest.json", "the registry manifest the release uploads")
	flag.Parse()
	checked, err := check(*config, *dist, *manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
	fmt.Println(checked)
}

type goreleaserConfig struct {
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		Goos   []string   `yaml:"goos"`
		Goarch []string   `yaml:"goarch"`
		Ignore []platform `yaml:"ignore"`
	} `yaml:"builds"`
}

type platform struct {
	Goos   string `yaml:"goos"`
	Goarch string `yaml:"goarch"`
}

// platforms are the os_arch pairs the configuration builds.
func (c goreleaserConfig) platforms() []string {
	var out []string
	for _, b := range c.Builds {
		for _, goos := range b.Goos {
			for _, goarch := range b.Goarch {
				if !slices.Contains(b.Ignore, platform{goos, goarch}) {
					out = append(out, goos+"_"+goarch)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// check returns a one-line summary of what it checked, or what is wrong.
func check(configPath, dist, manifestSource string) (string, error) {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return "", err
	}
	var cfg goreleaserConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", configPath, err)
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
	for _, p := range cfg.platforms() {
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
			problems = append(problems, filepath.Base(z)+": a zip for no platform of the configuration")
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
	return fmt.Sprintf("%s: %d platform zips, %s_SHA256SUMS and %s match what the Terraform Registry takes",
		meta.Version, len(sums)-1, prefix, manifest), nil
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
