// The test world's registry with the OCI referrers API: go-containerregistry's registry
// (pkg/registry, in memory, referrers on) behind a small front of ours.
//
// Built by tests/world/binaries.py from the Go module proxy (tests/world/pins.py); started by
// tests/world/referrers_registry.py. Two listeners share one registry:
//
//   - -raw ADDR: go-containerregistry's handler as it is. Its referrers list reports each
//     referrer's config media type as artifactType, even when the manifest has an
//     artifactType of its own (OCI 1.1 says: the manifest's artifactType, else the config's
//     media type); it does not paginate, filter by artifactType or answer ETags.
//   - -addr ADDR: the front the tests use. For GET /v2/<name>/referrers/<digest> it takes the
//     registry's whole list and corrects each artifactType from the manifest itself (the
//     workaround, here and not in lockgate), filters by ?artifactType= (naming it in
//     OCI-Filters-Applied), orders by digest, answers -page-size descriptors per page with a
//     Link to the next page (rel="next"), and gives each page a strong ETag, answering 304 to
//     an If-None-Match that matches. Everything else passes to the registry unchanged.
//
// Every request to the front is counted by kind; GET /_counts answers the counts as JSON.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/registry"
)

type descriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type front struct {
	inner    http.Handler
	pageSize int
	mu       sync.Mutex
	counts   map[string]int
}

func (f *front) count(kind string) {
	f.mu.Lock()
	f.counts[kind]++
	f.mu.Unlock()
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_counts" {
		f.mu.Lock()
		body, _ := json.Marshal(f.counts)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method == http.MethodGet && len(parts) >= 4 && parts[0] == "v2" && parts[len(parts)-2] == "referrers" {
		f.count("referrers")
		f.referrers(w, r, strings.Join(parts[1:len(parts)-2], "/"), parts[len(parts)-1])
		return
	}
	if len(parts) >= 3 && parts[0] == "v2" {
		f.count(strings.ToLower(r.Method) + " " + parts[len(parts)-2])
	}
	f.inner.ServeHTTP(w, r)
}

// artifactType as OCI 1.1 defines it for a referrer: the manifest's own, else its config's
// media type.
func (f *front) artifactType(name, digest, reported string) string {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v2/"+name+"/manifests/"+digest, nil)
	f.inner.ServeHTTP(rec, req)
	var manifest struct {
		ArtifactType string `json:"artifactType"`
		Config       struct {
			MediaType string `json:"mediaType"`
		} `json:"config"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &manifest) != nil {
		return reported
	}
	if manifest.ArtifactType != "" {
		return manifest.ArtifactType
	}
	return manifest.Config.MediaType
}

func (f *front) referrers(w http.ResponseWriter, r *http.Request, name, digest string) {
	rec := httptest.NewRecorder()
	f.inner.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/"+name+"/referrers/"+digest, nil))
	if rec.Code != http.StatusOK {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	var all index
	if err := json.Unmarshal(rec.Body.Bytes(), &all); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	wanted := r.URL.Query().Get("artifactType")
	kept := []descriptor{}
	for _, d := range all.Manifests {
		d.ArtifactType = f.artifactType(name, d.Digest, d.ArtifactType)
		if wanted == "" || d.ArtifactType == wanted {
			kept = append(kept, d)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Digest < kept[j].Digest })
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	start, end := page*f.pageSize, (page+1)*f.pageSize
	if start > len(kept) {
		start = len(kept)
	}
	if end > len(kept) {
		end = len(kept)
	}
	body, _ := json.Marshal(index{SchemaVersion: 2, MediaType: "application/vnd.oci.image.index.v1+json", Manifests: kept[start:end]})
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
	if wanted != "" {
		w.Header().Set("OCI-Filters-Applied", "artifactType")
	}
	if end < len(kept) {
		next := url.Values{"page": {strconv.Itoa(page + 1)}}
		if wanted != "" {
			next.Set("artifactType", wanted)
		}
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/referrers/%s?%s>; rel="next"`, name, digest, next.Encode()))
	}
	for _, candidate := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if strings.TrimSpace(candidate) == etag {
			f.count("referrers 304")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	io := bytes.NewReader(body)
	io.WriteTo(w)
}

func serve(addr string, handler http.Handler) net.Listener {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("listen %s: %v", addr, err)
	}
	go func() { log.Fatal(http.Serve(listener, handler)) }()
	return listener
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the front's address (what the tests use)")
	raw := flag.String("raw", "", "also serve go-containerregistry's handler as it is at this address")
	pageSize := flag.Int("page-size", 10, "referrers per page of the front")
	flag.Parse()
	logger := log.New(os.Stderr, "", log.LstdFlags)
	inner := registry.New(registry.WithReferrersSupport(true), registry.Logger(logger))
	if *raw != "" {
		fmt.Printf("raw %s\n", serve(*raw, inner).Addr())
	}
	f := &front{inner: inner, pageSize: *pageSize, counts: map[string]int{}}
	fmt.Printf("front %s\n", serve(*addr, f).Addr())
	select {}
}
