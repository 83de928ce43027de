//go:build !linux

package main

// stopWithParent is Linux's alone (PR_SET_PDEATHSIG); elsewhere the lab
// stops on SIGINT and SIGTERM only.
func stopWithParent(int) {}
