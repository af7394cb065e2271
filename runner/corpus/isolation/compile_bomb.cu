// Isolation: macro expansion that doubles 28 times, so the compiler front end must chew
// through a quarter of a billion tokens. Expect: the build is killed at its timeout (a
// compile failure that names the timeout); builds of other candidates go on.
#include <evokernel.h>

#define B0 +1
#define B1 B0 B0
#define B2 B1 B1
#define B3 B2 B2
#define B4 B3 B3
#define B5 B4 B4
#define B6 B5 B5
#define B7 B6 B6
#define B8 B7 B7
#define B9 B8 B8
#define B10 B9 B9
#define B11 B10 B10
#define B12 B11 B11
#define B13 B12 B12
#define B14 B13 B13
#define B15 B14 B14
#define B16 B15 B15
#define B17 B16 B16
#define B18 B17 B17
#define B19 B18 B18
#define B20 B19 B19
#define B21 B20 B20
#define B22 B21 B21
#define B23 B22 B22
#define B24 B23 B23
#define B25 B24 B24
#define B26 B25 B25
#define B27 B26 B26
#define B28 B27 B27

static const long long kBoom = 0 B28;

extern "C" int evk_forward(const EvkCall* call) { return (int)(kBoom & 1) * call->n_inputs; }
