package nodes

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

func ph(kind spec.Kind, name string) Placeholder { return Placeholder{Kind: kind, Name: name} }

// render renders t with each placeholder as "<kind|name>".
func render(t *testing.T, tpl *Template) string {
	t.Helper()
	out, err := tpl.Render(func(p Placeholder) []byte { return []byte("<" + string(p.Kind) + "|" + p.Name + ">") })
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return string(out)
}

func TestParseTemplateSyntax(t *testing.T) {
	for _, c := range []struct {
		name, text string
		phs        []Placeholder
		rendered   string
	}{
		{"plain", "no placeholders here\n", nil, "no placeholders here\n"},
		{"empty", "", nil, ""},
		{"one", "model = ${config:model}\n", []Placeholder{ph("config", "model")}, "model = <config|model>\n"},
		{"name holds colons", "${shell:zsh:normal}", []Placeholder{ph("shell", "zsh:normal")}, "<shell|zsh:normal>"},
		{"bound", "${bound:gitea-read/2:as}", []Placeholder{ph("bound", "gitea-read/2:as")}, "<bound|gitea-read/2:as>"},
		{"kind with digits and dash", "${a-1:x}", []Placeholder{ph("a-1", "x")}, "<a-1|x>"},
		{"escape", "$${x}", nil, "${x}"},
		{"escape of a placeholder", "$${config:x}", nil, "${config:x}"},
		{"escape then placeholder", "$${config:x} ${config:y}", []Placeholder{ph("config", "y")}, "${config:x} <config|y>"},
		{"dollar then escape", "$$${config:x}", nil, "$${config:x}"},
		{"lone dollar", "cost $5 and $", nil, "cost $5 and $"},
		{"dollar dollar", "$$ $$", nil, "$$ $$"},
		{"shell var", "echo $HOME", nil, "echo $HOME"},
		{"brace alone", "{x} }", nil, "{x} }"},
		{"name runs to the first brace", "${config:a{b}c}", []Placeholder{ph("config", "a{b")}, "<config|a{b>c}"},
		{"name holds dollar", "${config:$x}", []Placeholder{ph("config", "$x")}, "<config|$x>"},
		{"unknown kind parses", "${nope:x}", []Placeholder{ph("nope", "x")}, "<nope|x>"},
		{"distinct in order", "${config:b}${config:a}${config:b}${secret:a}",
			[]Placeholder{ph("config", "b"), ph("config", "a"), ph("secret", "a")},
			"<config|b><config|a><config|b><secret|a>"},
		{"adjacent", "${dir:a}${port:b}", []Placeholder{ph("dir", "a"), ph("port", "b")}, "<dir|a><port|b>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tpl, err := ParseTemplate("t.conf", []byte(c.text))
			if err != nil {
				t.Fatalf("ParseTemplate(%q): %v", c.text, err)
			}
			if got := tpl.Placeholders(); !reflect.DeepEqual(got, c.phs) && !(len(got) == 0 && len(c.phs) == 0) {
				t.Errorf("Placeholders = %v, want %v", got, c.phs)
			}
			if got := render(t, tpl); got != c.rendered {
				t.Errorf("rendered %q, want %q", got, c.rendered)
			}
		})
	}
}

func TestParseTemplateErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		line, col  int
		msg        string
	}{
		{"unclosed at end", "a = 1\nb = ${config:x", 2, 5, `unclosed "${"`},
		{"unclosed before newline", "x ${config:a\n}", 1, 3, `unclosed "${"`},
		{"bare open", "${", 1, 1, `unclosed "${"`},
		{"empty name", "\n\n  x=${config:}", 3, 5, "empty name"},
		{"name not UTF-8", "a\n x=${config:k\xff}", 2, 4, "not UTF-8 text"},
		{"empty kind", "${:x}", 1, 1, "empty kind"},
		{"no colon", "echo ${HOME}", 1, 6, `no ":" between kind and name`},
		{"empty body", "${}", 1, 1, `no ":"`},
		{"upper-case kind", "${Config:x}", 1, 1, `kind "Config" is not [a-z][a-z0-9-]*`},
		{"kind starts with digit", "${1a:x}", 1, 1, "kind \"1a\""},
		{"kind with underscore", "ok ${a_b:x}", 1, 4, "kind \"a_b\""},
		{"kind with space", "${ config:x}", 1, 1, "kind \" config\""},
		{"column counts characters", "grüße ${config:}", 1, 7, "empty name"},
		{"after a good one", "${config:a}\n  ${secret:}", 2, 3, "empty name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tpl, err := ParseTemplate("config.toml", []byte(c.text))
			if err == nil {
				t.Fatalf("ParseTemplate(%q) = %v, want an error", c.text, tpl.Placeholders())
			}
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("error %T %v is not a *TemplateError", err, err)
			}
			if te.File != "config.toml" || te.Line != c.line || te.Col != c.col {
				t.Errorf("error at %s:%d:%d, want config.toml:%d:%d (%v)", te.File, te.Line, te.Col, c.line, c.col, err)
			}
			if !strings.Contains(te.Msg, c.msg) {
				t.Errorf("message %q does not say %q", te.Msg, c.msg)
			}
			if errors.Is(err, ErrLimit) {
				t.Errorf("syntax error %v matches ErrLimit", err)
			}
		})
	}
}

func TestTemplateErrorString(t *testing.T) {
	_, err := ParseTemplate("config.toml", []byte("a\nb\nkey = ${config:x\n"))
	if err == nil || err.Error() != `config.toml:3:7: unclosed "${" (no "}" before the end of the line); write "$${" for a literal "${"` {
		t.Fatalf("error = %v", err)
	}
}

func TestCheckKinds(t *testing.T) {
	ok, err := ParseTemplate("ok", []byte("${config:a}${dir:b}${port:c}${access:d}${seat:e}${machine:f}"+
		"${secret:g}${collected:h}${shell:i}${environment:j}${contribution:k}${consumers:l}${bound:m:n}"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckKinds(ok); err != nil {
		t.Fatalf("CheckKinds on every filled kind: %v", err)
	}
	if len(ok.Placeholders()) != len(spec.Kinds()) {
		t.Fatalf("test names %d kinds, spec.Kinds has %d", len(ok.Placeholders()), len(spec.Kinds()))
	}
	bad, err := ParseTemplate("app.conf", []byte("${config:a}\n\t${env:HOME} ${nope:x}"))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckKinds(bad)
	var te *TemplateError
	if !errors.As(err, &te) || te.Line != 2 || te.Col != 2 || !strings.Contains(te.Msg, `"env"`) {
		t.Fatalf("CheckKinds = %v, want app.conf:2:2 naming kind env", err)
	}
	if !strings.HasPrefix(err.Error(), "app.conf:2:2: ") {
		t.Fatalf("error %q does not start with the file and position", err)
	}
}

func TestRenderVerbatim(t *testing.T) {
	tpl, err := ParseTemplate("t", []byte("a=${config:a}\nb=${config:b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	asked := map[Placeholder]int{}
	out, err := tpl.Render(func(p Placeholder) []byte {
		asked[p]++
		if p.Name == "a" {
			return []byte("${secret:x} $${y} ${")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a=${secret:x} $${y} ${\nb=\n"; string(out) != want {
		t.Fatalf("rendered %q, want %q", out, want)
	}
	if len(asked) != 2 || asked[ph("secret", "x")] != 0 {
		t.Fatalf("values asked for %v, want config:a and config:b only", asked)
	}
}

// A parsed template keeps no byte of the text it was parsed from: the
// archive's bytes changed afterwards change neither what it renders nor
// what it names nor where.
func TestTemplateOwnsItsText(t *testing.T) {
	text := []byte("# grüße $${x} $5\nport = ${port:http} ${nope:k} ${config:a:b}\n${port:http}$")
	tpl, err := ParseTemplate("t.conf", text)
	if err != nil {
		t.Fatal(err)
	}
	want, phs := render(t, tpl), tpl.Placeholders()
	line, col, _ := tpl.Pos(ph("nope", "k"))
	kindErr := CheckKinds(tpl).Error()
	for i := range text {
		text[i] = 'x'
	}
	if got := render(t, tpl); got != want {
		t.Errorf("after the text changed, renders %q, want %q", got, want)
	}
	if got := tpl.Placeholders(); !reflect.DeepEqual(got, phs) {
		t.Errorf("after the text changed, names %v, want %v", got, phs)
	}
	if l, c, _ := tpl.Pos(ph("nope", "k")); l != line || c != col || l != 2 || c != 21 {
		t.Errorf("Pos = %d:%d, want 2:21", l, c)
	}
	if got := CheckKinds(tpl).Error(); got != kindErr {
		t.Errorf("CheckKinds = %q, want %q", got, kindErr)
	}
	if want != "# grüße ${x} $5\nport = <port|http> <nope|k> <config|a:b>\n<port|http>$" {
		t.Errorf("renders %q", want)
	}
}

func TestTemplatePos(t *testing.T) {
	tpl, err := ParseTemplate("items/zsh.sh", []byte("# x\nexport A=${config:a} B=${secret:b}\n${secret:b}"))
	if err != nil {
		t.Fatal(err)
	}
	if l, c, ok := tpl.Pos(ph("secret", "b")); !ok || l != 2 || c != 24 {
		t.Fatalf("Pos = %d, %d, %v; want 2, 24", l, c, ok)
	}
	if _, _, ok := tpl.Pos(ph("secret", "zz")); ok {
		t.Fatal("Pos found a placeholder the template does not name")
	}
	err = tpl.ErrorAt(ph("secret", "b"), "an item may not name a secret")
	if err.Error() != "items/zsh.sh:2:24: an item may not name a secret" {
		t.Fatalf("ErrorAt = %q", err)
	}
}

func TestMaxPlaceholders(t *testing.T) {
	at := []byte(strings.Repeat("${config:a}", spec.MaxPlaceholders))
	if _, err := ParseTemplate("t", at); err != nil {
		t.Fatalf("%d placeholders refused: %v", spec.MaxPlaceholders, err)
	}
	over := append(append([]byte{}, at...), "\n${config:b}"...)
	_, err := ParseTemplate("many.conf", over)
	var te *TemplateError
	if !errors.As(err, &te) || te.Line != 2 || te.Col != 1 {
		t.Fatalf("error = %v, want one at many.conf:2:1", err)
	}
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "4096") || !strings.Contains(err.Error(), "MaxPlaceholders") {
		t.Fatalf("error %q does not name the limit", err)
	}
}

func TestMaxRenderedBytes(t *testing.T) {
	tpl, err := ParseTemplate("big.conf", []byte("x${config:a}y"))
	if err != nil {
		t.Fatal(err)
	}
	fits := bytes.Repeat([]byte{'v'}, spec.MaxRenderedBytes-2)
	out, err := tpl.Render(func(Placeholder) []byte { return fits })
	if err != nil || len(out) != spec.MaxRenderedBytes {
		t.Fatalf("rendering exactly %d bytes: len %d, %v", spec.MaxRenderedBytes, len(out), err)
	}
	_, err = tpl.Render(func(Placeholder) []byte { return append(fits, 'w') })
	if err == nil {
		t.Fatal("a rendered text one byte over the limit was accepted")
	}
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "big.conf") || !strings.Contains(err.Error(), "MaxRenderedBytes") {
		t.Fatalf("error %q does not name the template and the limit", err)
	}
}

func TestLimitConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"MaxArchiveBytes", spec.MaxArchiveBytes, 64 * 1024 * 1024},
		{"MaxArchiveMembers", spec.MaxArchiveMembers, 10000},
		{"MaxRenderedBytes", spec.MaxRenderedBytes, 16 * 1024 * 1024},
		{"MaxItemBytes", spec.MaxItemBytes, 512 * 1024},
		{"MaxPlaceholders", spec.MaxPlaceholders, 4096},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestPlaceholderHelpers(t *testing.T) {
	if s := ph("shell", "zsh:normal").String(); s != "${shell:zsh:normal}" {
		t.Errorf("String = %q", s)
	}
	for _, c := range []struct {
		p    Placeholder
		coll string
	}{
		{ph("collected", "hosts"), "hosts"},
		{ph("collected", "shell:zsh:normal"), "shell:zsh:normal"},
		{ph("shell", "zsh:normal"), "shell:zsh:normal"},
		{ph("environment", "ace"), "environment:ace"},
		{ph("contribution", "x"), "contribution:x"},
		{ph("config", "x"), ""},
		{ph("secret", "x"), ""},
	} {
		if got := CollectionName(c.p); got != c.coll {
			t.Errorf("CollectionName(%v) = %q, want %q", c.p, got, c.coll)
		}
		if spec.IsCollectionKind(c.p.Kind) != (c.coll != "") {
			t.Errorf("IsCollectionKind(%q) = %v", c.p.Kind, spec.IsCollectionKind(c.p.Kind))
		}
	}
}

func TestParseBoundName(t *testing.T) {
	for _, c := range []struct{ name, x, l, k, err string }{
		{"gitea-read:as", "gitea-read", "", "as", ""},
		{"gitea-read/second:url", "gitea-read", "second", "url", ""},
		{"db:dsn:ro", "db", "", "dsn:ro", ""},
		{"db/a/b:k", "db", "a/b", "k", ""},
		{"gitea-read", "", "", "", "want <provision>"},
		{":as", "", "", "", "empty provision"},
		{"/l:as", "", "", "", "empty provision"},
		{"x/:as", "", "", "", "empty local"},
		{"x:", "", "", "", "empty key"},
	} {
		x, l, k, err := ParseBoundName(c.name)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseBoundName(%q) error = %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || x != c.x || l != c.l || k != c.k {
			t.Errorf("ParseBoundName(%q) = %q %q %q %v", c.name, x, l, k, err)
		}
	}
}

// source writes tpl back as template text that parses to the same parts.
func source(tpl *Template) []byte {
	var b []byte
	for i, lit := range literals(tpl) {
		b = append(b, strings.ReplaceAll(lit, "${", "$${")...)
		if i < len(tpl.parts) {
			b = append(b, tpl.phs[tpl.parts[i].idx].String()...)
		}
	}
	return b
}

// literals are the literal runs of tpl: before each placeholder, and after
// the last.
func literals(tpl *Template) []string {
	var out []string
	from := int32(0)
	for _, pt := range tpl.parts {
		out = append(out, tpl.lits[from:pt.at])
		from = pt.at
	}
	return append(out, tpl.lits[from:])
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{
		"model = ${config:model}\n", "${shell:zsh:normal}", "$${x}", "$$${config:x}", "${", "${config:",
		"${:x}", "${Kind:x}", "${config:}", "a $ b $$ c", "${a:b\n}", "${bound:gitea/l:as}${secret:k}",
		"grüße ${config:ä}", "${a:${b:c}}", "$${${a:b}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		tpl, err := ParseTemplate("fuzz", text)
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) || te.Line < 1 || te.Col < 1 {
				t.Fatalf("error %v has no position", err)
			}
			return
		}
		phs := tpl.Placeholders()
		seen := map[Placeholder]bool{}
		for _, p := range phs {
			if seen[p] {
				t.Fatalf("placeholder %v listed twice", p)
			}
			seen[p] = true
			if _, _, ok := tpl.Pos(p); !ok {
				t.Fatalf("no position for %v", p)
			}
		}
		self := func(p Placeholder) []byte { return []byte(p.String()) }
		out, err := tpl.Render(self)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		escapes := false
		for _, lit := range literals(tpl) {
			escapes = escapes || strings.Contains(lit, "${")
		}
		if !escapes {
			// No literal "${" in the text: rendering placeholders as
			// themselves gives back text naming the same placeholders.
			again, err := ParseTemplate("fuzz", out)
			if err != nil {
				t.Fatalf("re-parsing %q: %v", out, err)
			}
			if !reflect.DeepEqual(again.Placeholders(), phs) {
				t.Fatalf("re-parsed %q to %v, want %v", out, again.Placeholders(), phs)
			}
		}
		// Writing literals escaped gives back the same template.
		again, err := ParseTemplate("fuzz", source(tpl))
		if err != nil {
			t.Fatalf("re-parsing source %q: %v", source(tpl), err)
		}
		if a, b := render(t, tpl), render(t, again); a != b {
			t.Fatalf("source %q renders %q, the original %q", source(tpl), b, a)
		}
	})
}

// A file of the scale benchmarks' shape (a comment line, then ten lines
// "slotN = ${kind:name}", some names twice) rendered over and over: the
// per-change cost of a template once its values are read.
func BenchmarkTemplateRender(b *testing.B) {
	text := "# file 12 of group 3\n"
	for q := 0; q < 10; q++ {
		text += fmt.Sprintf("slot%d = ${config:f12-%d} $${not} $$ x\n", q, q%7)
	}
	tpl, err := ParseTemplate("f0012.tmpl", []byte(text))
	if err != nil {
		b.Fatal(err)
	}
	vals := make([][]byte, len(tpl.Placeholders()))
	for i := range vals {
		vals[i] = []byte(fmt.Sprintf("value-%d", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tpl.render(vals); err != nil {
			b.Fatal(err)
		}
	}
}

// Parsing that file (once per template and archive digest).
func BenchmarkParseTemplate(b *testing.B) {
	text := "# file 12 of group 3\n"
	for q := 0; q < 10; q++ {
		text += fmt.Sprintf("slot%d = ${config:f12-%d} $${not} $$ x\n", q, q%7)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTemplate("f0012.tmpl", []byte(text)); err != nil {
			b.Fatal(err)
		}
	}
}

// A template of 4,096 placeholders on one line followed by 16 MiB without
// a newline: each placeholder's line was read to its end (quadratic: about
// a second here, five at the 64 MiB an archive may hold), where its "}"
// is all there is to find. Before the fix: ~1.3 s/op here; after: ~0.1 s/op.
func BenchmarkParseTemplateOneLongLine(b *testing.B) {
	text := append(bytes.Repeat([]byte("${config:k}"), spec.MaxPlaceholders), bytes.Repeat([]byte("x"), 16<<20)...)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ParseTemplate("long", text); err != nil {
			b.Fatal(err)
		}
	}
}
