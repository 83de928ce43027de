// Command benchtable turns `go test -bench` output into Markdown tables: one
// of every benchmark's metrics, and one of the targets benchmarks logged
// (proctest.Target's lines: what, target, measured, met or not met). It
// prints them and, with -doc FILE, writes them into FILE between the lines
// `<!-- NAME:begin -->` and `<!-- NAME:end -->`, NAME from -name (make bench
// keeps docs/PERFORMANCE.md's latest run that way as "bench", make
// bench-peer its own as "bench-peer").
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

func main() {
	doc := flag.String("doc", "", "write the tables into this Markdown file between the markers of -name")
	name := flag.String("name", "bench", "the make target run: the tables' title and markers")
	flag.Parse()
	table, err := tableOf(os.Stdin, *name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	fmt.Print(table)
	if *doc == "" {
		return
	}
	if err := writeInto(*doc, *name, table); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// targetMark starts the part of a benchmark's log line that proctest.Target
// wrote: "target | what | ≤ 0.15 ms | 0.921 ms | not met".
const targetMark = ": target | "

// tableOf reads benchmark lines (name, iterations, then value-unit pairs)
// and target lines.
func tableOf(r io.Reader, name string) (string, error) {
	var b, targets strings.Builder
	fmt.Fprintf(&b, "Latest `make %s`, %s:\n\n", name, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	b.WriteString("| benchmark | measured |\n|---|---|\n")
	pkg := ""
	rows := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, targetMark); i >= 0 {
			cells := strings.Split(line[i+len(targetMark):], " | ")
			if len(cells) == 4 {
				if cells[3] == "not met" {
					cells[3] = "**not met**"
				}
				fmt.Fprintf(&targets, "| %s |\n", strings.Join(cells, " | "))
			}
			continue
		}
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
	if targets.Len() > 0 {
		b.WriteString("\nTargets the benchmarks checked:\n\n| target | bound | measured | met? |\n|---|---|---|---|\n")
		b.WriteString(targets.String())
	}
	return b.String(), nil
}

// writeInto puts table between name's markers in the Markdown file at
// path, adding a section for them at its end the first time.
func writeInto(path, name, table string) error {
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		title := "Latest run"
		if name != "bench" {
			title = "Latest `make " + name + "`"
		}
		s = strings.TrimRight(s, "\n") + "\n\n## " + title + "\n\n" + begin + "\n" + end + "\n"
		i, j = strings.Index(s, begin), strings.Index(s, end)
	}
	s = s[:i+len(begin)] + "\n" + table + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
