package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

// Positive checks that each named duration or count flag of fs was given a
// value above zero: a zero or negative interval is a usage error naming the
// flag, never a panic (a ticker) or a storm (a retry every nanosecond).
func Positive(fs *flag.FlagSet, names ...string) error {
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil {
			panic("cli.Positive: no flag --" + name)
		}
		g, ok := f.Value.(flag.Getter)
		if !ok {
			panic("cli.Positive: --" + name + " has no value to check")
		}
		switch v := g.Get().(type) {
		case time.Duration:
			if v <= 0 {
				return fmt.Errorf("--%s %s: must be more than zero", name, f.Value)
			}
		case int:
			if v <= 0 {
				return fmt.Errorf("--%s %s: must be more than zero", name, f.Value)
			}
		default:
			panic("cli.Positive: --" + name + " is neither a duration nor an int")
		}
	}
	return nil
}

// PasswordEnv is the environment variable a NATS password is read from.
const PasswordEnv = "MESH_NATS_PASSWORD"

// PasswordFlags adds --password-file to fs. The password returned by the
// func is the file's first line, else $MESH_NATS_PASSWORD, else empty. A
// password on the command line is refused (see RefusePasswordArg).
func PasswordFlags(fs *flag.FlagSet) func() (string, error) {
	file := fs.String("password-file", "", "file holding the NATS password (for --user; or set $"+PasswordEnv+"); a --password on the command line is refused: every user of the machine sees it in the process list")
	return func() (string, error) {
		if *file != "" {
			b, err := os.ReadFile(*file)
			if err != nil {
				return "", fmt.Errorf("--password-file: %w", err)
			}
			line, _, _ := strings.Cut(string(b), "\n")
			return strings.TrimSuffix(line, "\r"), nil
		}
		return os.Getenv(PasswordEnv), nil
	}
}

// CheckUserPassword refuses a --user with no password (no --password-file,
// no $MESH_NATS_PASSWORD, or an empty one), as a start error: the bus
// would say only "Authorization Violation", not that no password was
// given. Every command that takes --user calls it.
func CheckUserPassword(user, password string) error {
	if user != "" && password == "" {
		return fmt.Errorf("--user %s has no password: give --password-file F (its first line the password) or set $%s", user, PasswordEnv)
	}
	return nil
}

// RefusePasswordArg refuses a --password among args (before they are
// parsed, so that no message repeats its value): a password on a command
// line shows in the process list to every user of the machine.
func RefusePasswordArg(args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "password" {
			return fmt.Errorf("--password is not accepted on the command line, where every user of the machine sees it: use --password-file F or $%s", PasswordEnv)
		}
	}
	return nil
}

// UsageExit is the exit code of a command whose flags did not parse: 0
// after -h (the usage is printed), 2 after a usage error.
func UsageExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// Parse parses args into fs and refuses positional arguments. When ok is
// false the command exits with code: 0 after -h, 2 after a usage error
// (said on stderr, the message led by fs's name).
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if name, ok := badDuration(fs, err); ok {
			fmt.Fprintf(stderr, "%s: --%s takes a duration with its unit, e.g. 90s, 10m, 1h\n", fs.Name(), name)
		}
		return UsageExit(err), false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}

// badDuration names the flag of err when it is a duration flag whose value
// did not parse: the flag package says only "parse error" (a number
// without its unit, "10", is the common case).
func badDuration(fs *flag.FlagSet, err error) (string, bool) {
	_, rest, ok := strings.Cut(err.Error(), " for flag -")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, ":")
	f := fs.Lookup(name)
	if f == nil {
		return "", false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "", false
	}
	_, isDuration := g.Get().(time.Duration)
	return name, isDuration
}

// URLPasswordWarning is the warning a command logs when its --nats URLs
// (comma-separated) hold a password, empty when none does: a command line
// shows in the process list to every user of the machine, which is why a
// --password is refused (RefusePasswordArg). A URL password is warned of,
// not refused: the example configuration's dev users log in that way.
// instead says where the password goes instead; the warning never holds
// the password.
func URLPasswordWarning(urls, instead string) string {
	for _, s := range strings.Split(urls, ",") {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "://") {
			s = "nats://" + s // as nats.go and bus.CheckURLs read "user:pw@host:4222"
		}
		u, err := url.Parse(s)
		if err != nil || u.User == nil {
			continue
		}
		if _, ok := u.User.Password(); ok {
			return "the --nats URL holds a password, which every user of this machine sees in the process list: " + instead
		}
		if u.User.Username() != "" {
			// nats://<token>@host: NATS reads a user with no password as a
			// token, as secret as a password (an outside audit).
			return "the --nats URL holds a token (user@ with no password), which every user of this machine sees in the process list: " + instead
		}
	}
	return ""
}

// UsageOut is where a command's flag set prints: stdout when args ask for
// the usage (-h, -help or --help, before a "--"), so that `… --help | less`
// shows it as the commands' own help does; stderr otherwise, where a usage
// error is said.
func UsageOut(args []string, stdout, stderr io.Writer) io.Writer {
	for _, a := range args {
		switch a {
		case "--":
			return stderr
		case "-h", "-help", "--help":
			return stdout
		}
	}
	return stderr
}
