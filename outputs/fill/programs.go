package fill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// ProgramTimeout bounds one restart or reload.
const ProgramTimeout = 2 * time.Minute

// programs works out, for each distinct unit the request names, whether it is
// restarted, reloaded or left alone: only a unit with a file actually changed
// on disk is acted on, restart winning over reload.
func programs(steps []step) []Program {
	var out []Program
	idx := map[string]int{}
	for _, st := range steps {
		oc := st.file.OnChange
		if oc.Unit == "" {
			continue
		}
		i, ok := idx[oc.Unit]
		if !ok {
			i = len(out)
			idx[oc.Unit] = i
			out = append(out, Program{Unit: oc.Unit, Action: ProgramNone})
		}
		if !st.write {
			continue
		}
		switch {
		case oc.Action == OnChangeRestart:
			out[i].Action = ProgramRestarted
		case oc.Action == OnChangeReload && out[i].Action == ProgramNone:
			out[i].Action = ProgramReloaded
		}
	}
	return out
}

// programsFailed is a request's failure that came once it was carried
// out: its files written and removed and recorded as the module's, a
// restart or reload it ran failed (kept pending: the module's next
// request runs it again). Its answer says so (errorBody.ProgramFailed).
type programsFailed struct{ err error }

func (e *programsFailed) Error() string { return e.err.Error() }
func (e *programsFailed) Unwrap() error { return e.err }

// runPrograms restarts or reloads each unit once, going on past a failure;
// it returns the programs that failed, and an error joining their failures.
func (s *Server) runPrograms(ctx context.Context, module string, progs []Program) (failed []Program, err error) {
	var errs []error
	for _, p := range progs {
		verb := ""
		switch p.Action {
		case ProgramRestarted:
			verb = OnChangeRestart
		case ProgramReloaded:
			verb = OnChangeReload
		default:
			continue
		}
		if err := s.runProgram(ctx, verb, p.Unit); err != nil {
			s.Log.Error().Err(err).Str("module", module).Str("unit", p.Unit).Str("action", verb).Msg("program not " + p.Action)
			errs = append(errs, err)
			failed = append(failed, p)
			continue
		}
		s.Log.Info().Str("module", module).Str("unit", p.Unit).Msg("program " + p.Action)
	}
	return failed, errors.Join(errs...)
}

func (s *Server) runProgram(ctx context.Context, verb, unit string) error {
	argv := []string{"systemctl", verb, unit}
	if len(s.Command) > 0 {
		argv = append(slices.Clone(s.Command), verb, unit)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ProgramTimeout)
	defer cancel()
	out, err := runCommand(ctx, argv)
	if err != nil {
		if msg := strings.TrimSpace(out); msg != "" {
			return fmt.Errorf("%s %s of unit %s: %w: %s", argv[0], verb, unit, err, msg)
		}
		return fmt.Errorf("%s %s of unit %s: %w", argv[0], verb, unit, err)
	}
	return nil
}

// outputGrace is how long a program's output is read for once it has
// exited, when something it left running still holds its output open.
const outputGrace = 200 * time.Millisecond

// runCommand runs argv and returns what it wrote to its stdout and stderr.
// What it writes is kept as its head and tail alone (capture), however
// much it writes. It is done when the command exits: the output goes through a pipe of
// mesh-fill's own, read by a goroutine of its own, so a child the command
// left running (a lab's `prog &`) holding the pipe open does not hold the
// request until it ends (exec's own pipes wait for their EOF). The child's
// later output is read and dropped, never closed on it (no SIGPIPE).
func runCommand(ctx context.Context, argv []string) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return "", err
	}
	var out capture
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer r.Close()
		io.Copy(&out, r)
	}()
	err = cmd.Wait()
	select {
	case <-drained:
	case <-time.After(outputGrace):
	}
	return out.String(), err
}
