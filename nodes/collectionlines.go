package nodes

import (
	"fmt"
	"strings"
)

// checkCollectionLines refuses what would break the comment line that
// introduces each item in a collector's file, `<comment> <contributor>`
// (SPEC §4.4): a collections[] comment, or the name of a module that
// contributes items, holding a line break ("\n" or "\r"). That line would
// be more than one, the rest of it no comment: in a shell collection a
// command run by every shell that reads the file (a contributor named
// "x\nrm -rf ~"). The SPEC says one line; a plan that cannot give one
// fails its own module, naming the field, and no other module's file
// changes. Other control bytes stay on their line and are left as given.
// A comment left out, empty or blank is refused too: the line would be
// " <contributor>", no comment, and in a shell file a command.
func checkCollectionLines(module string, p *Plan) string {
	if len(p.Items) > 0 && strings.ContainsAny(module, "\r\n") {
		return fmt.Sprintf("module name %.40q holds a line break, and it has items: the comment line naming it before its item in a collector's file would not be one line", module)
	}
	for i, c := range p.Collections {
		if strings.TrimSpace(c.Comment) == "" {
			return fmt.Sprintf("collections[%d] (%s): no comment: each item is introduced by the line `<comment> <contributor>`, which without one is no comment line", i, c.Name)
		}
		if strings.ContainsAny(c.Comment, "\r\n") {
			return fmt.Sprintf("collections[%d] (%s): comment %.40q holds a line break: the line `<comment> <contributor>` introducing each item would not be one line", i, c.Name, c.Comment)
		}
	}
	return ""
}
