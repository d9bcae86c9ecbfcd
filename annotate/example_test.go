package annotate_test

import (
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
)

// The input array of Listing 2 and 3 of the JetLag paper: a (2000, 80, 3)
// human activity recognition data set read with page tiling on 2
// localities, as printed on locality 0.
func Example() {
	t, err := annotate.New(annotate.Page, []int{2000, 80, 3}, 2)
	if err != nil {
		panic(err)
	}
	a, err := annotate.NewAnnotation("HAR_csv_1", 0, t)
	if err != nil {
		panic(err)
	}
	fmt.Println(a)
	// Output:
	// annotation("localities", ["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]], ["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]], ["locality", 0, 2], ["name", "HAR_csv_1/0"])
}

func ExampleParse() {
	a, err := annotate.Parse(`annotation("localities",
		["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]],
		["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]],
		["locality", 1, 2],
		["name", "HAR_csv_1/0"])`)
	if err != nil {
		panic(err)
	}
	fmt.Println(a.FullName(), a.Tiling.Shape, a.Locality, a.Local().Owned)
	fmt.Println(a.Next().FullName())
	// Output:
	// HAR_csv_1/0 [2000 80 3] 1 [pages [1000, 2000), rows [0, 80), columns [0, 3)]
	// HAR_csv_1/1
}

func ExamplePlan() {
	rows, _ := annotate.New(annotate.Row, []int{4, 4}, 2)
	cols, _ := annotate.New(annotate.Column, []int{4, 4}, 2)
	pieces, _ := annotate.Plan(rows, cols)
	for _, p := range pieces {
		fmt.Println(p)
	}
	fmt.Println("moved:", annotate.Moved(pieces))
	// Output:
	// 0 -> 0 [rows [0, 2), columns [0, 2)]
	// 1 -> 0 [rows [2, 4), columns [0, 2)]
	// 0 -> 1 [rows [0, 2), columns [2, 4)]
	// 1 -> 1 [rows [2, 4), columns [2, 4)]
	// moved: 8
}
