// qgemv4.cu's store for one output (placed in front of its body): row `row` of y.
auto put = [&](long long row, __half h) { y[row] = h; };
