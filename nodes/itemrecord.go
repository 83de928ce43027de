package nodes

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// An item is kept in mesh-provisioner_collect (SPEC §4.4), one message of
// the bus each: an item whose record the bus cannot hold is not recorded,
// so it is no item of its collection either. The item fails in the graph,
// before any collector is filled with it, as an item over 512 KiB does:
// its module fails naming the collection and the limit, the record is
// deleted, and every collector's file goes without it until it fits.

// SetItemRecordLimit gives the mesh the bus's limit on one message (the
// connection's max payload; 0: not known, nothing checked), read as each
// item renders.
func (m *NodeGraph) SetItemRecordLimit(limit func() int64) { m.itemLimit = limit }

// itemRoom is the bus's limit on an item's record, 0 when not known.
func (m *NodeGraph) itemRoom() int64 {
	if m.itemLimit == nil {
		return 0
	}
	return m.itemLimit()
}

// ItemRecord is the value an item is recorded as in mesh-provisioner_collect
// (SPEC §4.4), the fields in that order.
type ItemRecord struct {
	Collection  string `json:"collection"`
	Contributor string `json:"contributor"`
	Item        string `json:"item"`
}

// EncodeItemRecord is r's JSON as the collect bucket holds it: no HTML
// escaping (an item's `<`, `>` and `&` stay one byte each).
func EncodeItemRecord(r ItemRecord) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		panic(fmt.Sprintf("nodes: encoding an item record: %v", err)) // strings only
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// itemRecordFits is nil when the record of module's item for collection
// fits limit (0: not known), else the error failing the item.
func itemRecordFits(limit int64, module, collection, template string, text []byte) error {
	// JSON writes a byte as at most six (\u00XX): no need to encode below.
	if limit <= 0 || int64(6*(len(collection)+len(module)+len(text))+64) <= limit {
		return nil
	}
	size := len(EncodeItemRecord(ItemRecord{Collection: collection, Contributor: module, Item: string(text)}))
	if int64(size) <= limit {
		return nil
	}
	return fmt.Errorf("the item for collection %s (template %s) is %d bytes encoded as its record in the collect bucket, over the bus's limit of %d bytes on one message (an item is kept in a bucket) (%w)",
		collection, template, size, limit, ErrLimit)
}
