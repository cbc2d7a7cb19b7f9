package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestNoFlagNamesBelowCmd: the packages below cmd/ name a render's inputs by their input names (pipeline.In*,
// installconfig.Ref); only cmd/render-static knows its flags. Every string literal of pkg/ and internal/ (tests
// aside) is searched for "--<flag>" of every command's flag; "--<flag>=" is a component's own command line (the
// kubelet's --node-ip=...), not ours.
func TestNoFlagNamesBelowCmd(t *testing.T) {
	root := newRootCommand(&strings.Builder{})
	var names []string
	for _, c := range append(root.Commands(), root) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				names = append(names, regexp.QuoteMeta(f.Name))
			}
		})
	}
	flag := regexp.MustCompile(`(^|[^-\w])--(` + strings.Join(names, "|") + `)\b($|[^=\w-])`)
	fset := token.NewFileSet()
	found := 0
	for _, dir := range []string{repo("pkg"), repo("internal")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			found++
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && flag.MatchString(s) {
					t.Errorf("%s: %q names a flag of render-static: name the input instead (pipeline.In*, installconfig.Ref)", fset.Position(lit.Pos()), s)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 100 {
		t.Fatalf("only %d Go files searched", found)
	}
}
