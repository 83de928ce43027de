package nodes

import (
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A key out of shape (SPEC §2.1) under this node in the config bucket or a
// provider's is ignored for filling and warned of in the log; the need it
// was most likely meant for (a writer that encodes names otherwise: a
// config key written unencoded, ace.web.db.url for db.url; a provider
// escaping '-' or writing lower-case hex) waited "not written yet", and its
// report and explain said nothing of it. So each such key is kept by the
// key it reads as (spec.LenientKey), and the why of a value waiting for
// that key names it and why it is out of shape.

// nearMissKey is a key out of shape and why it is.
type nearMissKey struct {
	raw, why string
}

// maxNearMiss bounds the keys kept per bucket: whoever writes the bucket
// may write thousands.
const maxNearMiss = 1024

// nearMissPut keeps bucket's key out of shape (err says why) under the
// key it reads as, and says it to the value waiting for that key.
func (m *NodeGraph) nearMissPut(bucket, key string, err error) {
	canon, ok := m.readsAs(bucket, key)
	if !ok {
		return
	}
	if m.nearMiss == nil {
		m.nearMiss = map[string]map[string]nearMissKey{}
	}
	km := m.nearMiss[bucket]
	if km == nil {
		km = map[string]nearMissKey{}
		m.nearMiss[bucket] = km
	}
	if _, had := km[canon]; !had && len(km) >= maxNearMiss {
		return
	}
	km[canon] = nearMissKey{raw: key, why: err.Error()}
	m.nearMissMoved(bucket, canon)
}

// nearMissDelete forgets bucket's key out of shape.
func (m *NodeGraph) nearMissDelete(bucket, key string) {
	canon, ok := m.readsAs(bucket, key)
	if !ok || m.nearMiss[bucket][canon].raw != key {
		return
	}
	delete(m.nearMiss[bucket], canon)
	if len(m.nearMiss[bucket]) == 0 {
		delete(m.nearMiss, bucket)
	}
	m.nearMissMoved(bucket, canon)
}

// readsAs is the key a key out of shape of bucket under this node reads as.
func (m *NodeGraph) readsAs(bucket, key string) (string, bool) {
	prefix := spec.EncodeToken(m.node) + "."
	if len(key) <= len(prefix) || key[:len(prefix)] != prefix {
		return "", false
	}
	if bucket == spec.ConfigBucket {
		return spec.LenientKey(key, 3, true) // the config key is the last token
	}
	if canon, ok := spec.LenientKey(key, 3, false); ok {
		return canon, true
	}
	return spec.LenientKey(key, 4, false)
}

// nearMissMoved sets again the value waiting for bucket's key canon.
func (m *NodeGraph) nearMissMoved(bucket, canon string) {
	if bucket == spec.ConfigBucket {
		toks, err := spec.DecodeKey(canon, 3)
		if err != nil || !m.configReg.ok {
			return
		}
		if n := m.configNeedOf(toks[1], toks[2]); n != nil {
			m.setConfigNeed(n, canon)
		}
		return
	}
	if n := m.existing(KindBound, bucket+" "+canon); n != nil {
		m.initBound(n, bucket, canon)
	}
}

// nearMissWhy is what a value waiting for bucket's key canon adds to its
// "not written yet": the key out of shape that reads as it, if any.
func (m *NodeGraph) nearMissWhy(bucket, canon string) string {
	k, ok := m.nearMiss[bucket][canon]
	if !ok {
		return ""
	}
	return "; the bucket holds " + k.raw + ", out of shape (" + k.why + "): its writer encodes names otherwise than SPEC §2.1"
}
