package export

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"sync"
)

// gzipDataURL is the source of a compressed file (File.Compressed): "data:;base64," and the base64 of contents
// gzip-compressed at gzip.BestCompression, with a header that names no file and no time, so the same contents always
// give the same source (the render is deterministic, and an unchanged re-render finds its earlier aio.ign
// identical). Ignition decodes the data URL, then gunzips it ("compression": "gzip", config/v3_2 and later).
//
// The compressed files are the node's programs, the same in every render a binary makes: the sources are kept
// (gzipCache), so a fleet compresses each once.
func gzipDataURL(contents []byte) string {
	gzipCache.Lock()
	src, ok := gzipCache.sources[string(contents)] // looked up without a copy of contents
	gzipCache.Unlock()
	if ok {
		return src
	}
	var z bytes.Buffer
	w, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		panic(err) // only for a level out of range
	}
	_, _ = w.Write(contents) // a bytes.Buffer does not fail
	_ = w.Close()
	src = "data:;base64," + base64.StdEncoding.EncodeToString(z.Bytes())
	gzipCache.Lock()
	if len(gzipCache.sources) >= gzipCacheMax {
		clear(gzipCache.sources)
	}
	gzipCache.sources[string(contents)] = src
	gzipCache.Unlock()
	return src
}

// gzipCacheMax bounds gzipCache: a few programs per render, the same in every render.
const gzipCacheMax = 64

var gzipCache = struct {
	sync.Mutex
	sources map[string]string // by contents
}{sources: map[string]string{}}
