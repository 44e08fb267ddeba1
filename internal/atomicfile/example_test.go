package atomicfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
)

func ExampleWrite() {
	dir, _ := os.MkdirTemp("", "atomicfile-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "results.json")
	if err := atomicfile.Write(path, []byte(`{"points":[]}`), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(path)
	fmt.Println(string(b))
	// Output: {"points":[]}
}

func ExampleLeftover() {
	fmt.Println(atomicfile.Leftover(".frontend.addr.tmp2961474"))
	fmt.Println(atomicfile.Leftover("frontend.addr"))
	// Output:
	// frontend.addr true
	//  false
}
