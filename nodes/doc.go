// Package nodes holds the kinds of node the provisioner puts in the graph
// (placeholders, secrets, items, collections, consumers, files, modules),
// the template parser they share, the plan parser and the bus key codec.
// It imports graph and nothing else of the project.
package nodes
