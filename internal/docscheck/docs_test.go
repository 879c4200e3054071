// Package docscheck checks the published documentation where a machine can:
// what a reader sees broken, a test sees first.
package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// markdownFiles are the pages a reader reads: the generated docs, the
// README and the examples' READMEs.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md")}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// Every code fence closes, and a closing fence is alone on its line: text
// after it ("``` Lowering", from a template that put text right after a
// tffile) turns the rest of the page into code.
func TestCodeFencesClose(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	if len(files) < 20 {
		t.Fatalf("found %d Markdown files; want the docs, the README and the examples' READMEs", len(files))
	}
	for _, path := range files {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		open := 0 // line of the open fence, 0 when none
		for i, line := range strings.Split(string(body), "\n") {
			fence := strings.TrimSpace(line)
			if !strings.HasPrefix(fence, "```") {
				continue
			}
			if open == 0 {
				open = i + 1
				continue
			}
			if fence != "```" {
				t.Errorf("%s:%d: the code fence opened at line %d closes with text after it (%q): put the text on a line of its own", path, i+1, open, fence)
			}
			open = 0
		}
		if open != 0 {
			t.Errorf("%s:%d: a code fence that never closes", path, open)
		}
	}
}
