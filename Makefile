# The provisioner. `make test` is the one command that runs every test.
GO ?= go
PKGS = ./...

.PHONY: build test bench lint run fuzz dot

build:
	$(GO) build ./...

test:
	$(GO) vet ./...
	$(GO) test -race -timeout 12m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./... | tee bench.out

lint:
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fuzz:
	$(GO) test ./nodes -run '^$$' -fuzz '^FuzzDecodeToken$$' -fuzztime 10s
	$(GO) test ./nodes -run '^$$' -fuzz '^FuzzParseTemplate$$' -fuzztime 10s
	$(GO) test ./nodes -run '^$$' -fuzz '^FuzzParseAssignment$$' -fuzztime 10s
	$(GO) test ./inputs/archive -run '^$$' -fuzz '^FuzzReadArchive$$' -fuzztime 10s

run:
	$(GO) run ./cmd/mesh-lab

dot:
	$(GO) run ./cmd/mesh-provisioner-client graph dot | dot -Tsvg > graph.svg
