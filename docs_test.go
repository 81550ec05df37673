package rediskit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// The documents a user reads are checked as code is: every relative link
// and image resolves (and every #anchor names a heading of its file), and
// the README's quick start builds and runs against a real server.

// markdownFiles are the repository's Markdown files (git's list, so that
// nothing generated or ignored is checked).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	return files
}

var (
	// [text](target) and ![alt](target), the target up to a space or ')'.
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// <img src="..."> and <a href="...">.
	htmlLink = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	// A fenced code block, whose content is not Markdown.
	fence = regexp.MustCompile("(?ms)^```.*?^```")
)

// links returns the link targets of a Markdown text, code blocks and
// inline code left out.
func links(text string) []string {
	text = fence.ReplaceAllString(text, "")
	text = regexp.MustCompile("`[^`\n]*`").ReplaceAllString(text, "")
	var out []string
	for _, re := range []*regexp.Regexp{mdLink, htmlLink} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors returns the anchors GitHub makes of a Markdown text's headings:
// lower case, spaces to '-', punctuation other than '-' and '_' dropped,
// a repeated one suffixed -1, -2, ...
func anchors(text string) map[string]bool {
	text = fence.ReplaceAllString(text, "")
	got := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			got[a+"-"+strconv.Itoa(n)] = true
		} else {
			got[a] = true
		}
		seen[a]++
	}
	return got
}

func TestMarkdownLinks(t *testing.T) {
	files := markdownFiles(t)
	checked := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(text)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue // not ours to check offline
			}
			path, anchor, _ := strings.Cut(target, "#")
			checked++
			resolved := f
			if path != "" {
				resolved = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s: link %q: %s does not exist", f, target, resolved)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			body, err := os.ReadFile(resolved)
			if err != nil {
				t.Errorf("%s: link %q: %v", f, target, err)
				continue
			}
			if !anchors(string(body))[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", f, target, resolved, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no relative link found in %v: is the parser broken?", files)
	}
	t.Logf("%d relative links in %d files", checked, len(files))
}

// The checker itself: a missing file, a missing anchor and a link in a
// code block (not a link) are told apart.
func TestMarkdownLinkParsing(t *testing.T) {
	text := "# Quick start\n## Pick your deployment\n## Pick your deployment\n" +
		"See [the lab](docs/lab.md#start), ![fig](docs/a.svg) and <img src=\"b.png\">.\n" +
		"```go\nx := a[0](b)\n```\n`[not](a-link)`\n"
	got := links(text)
	want := []string{"docs/lab.md#start", "docs/a.svg", "b.png"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("links = %q, want %q", got, want)
	}
	a := anchors(text)
	for _, want := range []string{"quick-start", "pick-your-deployment", "pick-your-deployment-1"} {
		if !a[want] {
			t.Errorf("anchors %v lack %q", a, want)
		}
	}
}

// The README's first Go block is the quick start: a complete program a
// user pastes. It must build, and run against a real server with
// REDIS_URL set, printing what it read.
func TestReadmeQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no ```go block")
	}
	src := m[1]
	if !bytes.HasPrefix(src, []byte("package main\n")) || !bytes.Contains(src, []byte("rediskit.NewClient")) {
		t.Fatalf("the README's first Go block is not a complete program using rediskit.NewClient…:\n%s", src)
	}
	// A directory of the module (so that it builds against this
	// checkout), named so that ./... patterns skip it.
	dir, err := os.MkdirTemp(".", "_quickstart")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "quickstart")
	ctx := testkit.Context(t, 3*time.Minute)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./"+filepath.Base(dir))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the README's quick start does not build: %v\n%s", err, out)
	}

	l := lab.New(t, lab.Config{})
	run := exec.CommandContext(ctx, bin)
	run.Env = append(os.Environ(), "REDIS_URL=redis://"+l.Node(0).Addr())
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's quick start failed against %s: %v\n%s", l.Node(0).Addr(), err, out)
	}
	t.Logf("quick start printed: %s", out)
	if v, err := l.Node(0).Do(context.Background(), "EXISTS", "greeting").Int(); err != nil || v != 1 {
		t.Fatalf("the quick start wrote nothing (EXISTS greeting: %d, %v); it printed:\n%s", v, err, out)
	}
}

// guideExempt are the files of docs/ that are not a guide to a job, so
// need not open with a program: the index, and the CLI reference (its
// samples are the CLI's, checked by cmd/rediskit's TestDocSamples).
var guideExempt = map[string]bool{"README.md": true, "cli.md": true}

// Every guide in docs/ opens with a runnable example: its first code
// block is a complete Go program. Every complete program in docs/ (a ```go
// block that starts with "package main") builds against this checkout,
// so a guide cannot drift from the API it teaches.
func TestDocsProgramsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	guides, err := filepath.Glob("docs/*.md")
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guides in docs/: %v", err)
	}
	block := regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")
	root, err := os.MkdirTemp(".", "_docprograms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	var pkgs []string
	where := map[string]string{}
	for _, g := range guides {
		text, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		blocks := block.FindAllSubmatch(text, -1)
		name := filepath.Base(g)
		if !guideExempt[name] && (len(blocks) == 0 || string(blocks[0][1]) != "go" ||
			!bytes.HasPrefix(blocks[0][2], []byte("package main\n"))) {
			t.Errorf("%s does not open with a runnable example (its first code block is not a ```go package main)", g)
		}
		for i, b := range blocks {
			if string(b[1]) != "go" || !bytes.HasPrefix(b[2], []byte("package main\n")) {
				continue
			}
			dir := filepath.Join(root, strings.TrimSuffix(name, ".md")+"_"+strconv.Itoa(i))
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), b[2], 0o600); err != nil {
				t.Fatal(err)
			}
			pkgs = append(pkgs, "./"+filepath.ToSlash(dir))
			where["./"+filepath.ToSlash(dir)] = fmt.Sprintf("%s, code block %d", g, i+1)
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("no complete Go program in docs/")
	}
	ctx := testkit.Context(t, 5*time.Minute)
	out, err := exec.CommandContext(ctx, "go", append([]string{"vet"}, pkgs...)...).CombinedOutput()
	if err != nil {
		msg := string(out)
		for p, w := range where {
			msg = strings.ReplaceAll(msg, strings.TrimPrefix(p, "./"), w)
		}
		t.Fatalf("a program in docs/ does not build: %v\n%s", err, msg)
	}
	t.Logf("%d programs in docs/ build", len(pkgs))
}
