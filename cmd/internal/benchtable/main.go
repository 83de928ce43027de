// Command benchtable turns `go test -bench` output into a Markdown table:
// it prints the table and, with -doc FILE, writes it into FILE between the
// lines `<!-- bench:begin -->` and `<!-- bench:end -->` (make bench keeps
// docs/PERFORMANCE.md's latest run that way).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

const begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"

func main() {
	doc := flag.String("doc", "", "write the table into this Markdown file between the bench markers")
	flag.Parse()
	table, err := tableOf(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	fmt.Print(table)
	if *doc == "" {
		return
	}
	if err := writeInto(*doc, table); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// tableOf reads benchmark lines: name, iterations, then value-unit pairs.
func tableOf(r io.Reader) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Latest `make bench`, %s:\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	b.WriteString("| benchmark | measured |\n|---|---|\n")
	pkg := ""
	rows := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p[strings.LastIndex(p, "/")+1:]
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		var cells []string
		for i := 2; i+1 < len(f); i += 2 {
			cells = append(cells, f[i]+" "+f[i+1])
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i] // the GOMAXPROCS suffix
		}
		fmt.Fprintf(&b, "| %s.%s | %s |\n", pkg, name, strings.Join(cells, ", "))
		rows++
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if rows == 0 {
		return "", fmt.Errorf("no benchmark lines read")
	}
	return b.String(), nil
}

func writeInto(path, table string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		s = strings.TrimRight(s, "\n") + "\n\n## Latest run\n\n" + begin + "\n" + end + "\n"
		i, j = strings.Index(s, begin), strings.Index(s, end)
	}
	s = s[:i+len(begin)] + "\n" + table + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
