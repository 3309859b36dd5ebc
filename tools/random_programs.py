#!/usr/bin/env python3
"""random_programs.py — random, well-typed scanfuse programs for differential testing.

Each program declares one or two inputs of a random dtype and shape (1 to 3 dims, sizes
from 1 to 70001, at most 300000 elements; in 3 % of the programs 1-D of 1000003 or 2^21)
and applies 2 to 12 ops drawn from the scans (every scan op, both directions, inclusive
and exclusive, with and without a dtype), pointwise unary and binary ops (broadcasting
against keepdim results and literals; every unary op, some float ones on integers and
bools too, and every comparison of integers),
reductions over one or several dims, casts, where, views (permute, reshape, slice,
expand), pad, triu/tril, matmul, creation ops (arange, iota, full) combined with the
values, and index ops built to be in range (topk, argsort, gather, take_along_dim,
index_select and scatter with indices from argmax, one_hot, bincount); a few inputs
are empty.  Its outputs are a random subset of the values it computes, so values read
both by a later kernel and by the caller appear too.  The program is valid by
construction: a rejection is a finding, as is a crash or a failed --check.

Dtypes are tracked as PyTorch promotes them, so that ops that refuse bool (neg, abs,
relu, sub) or need a float (logcumsumexp, exp, ...) are only applied where they are
defined.  Float comparisons and divisors are inputs only: a computed float compared
with a threshold could flip between the fused result and the float64 reference, and a
quotient by a cancelling cumsum amplifies the sum's allowed error, both legitimately;
for the same reason log, log1p, rsqrt and reciprocal take inputs only, and so do float
cumprod and prod: a product inherits the relative error of every factor, and a factor
from a cancelling sum may carry a relative error far above its own ulp.  exp, expm1,
sigmoid and silu of a computed float take its tanh: their relative error is the
argument's absolute error times up to its magnitude (expm1 of a logcumsumexp of 13.5 was
11 float32 ulps off where 2 are allowed, legitimately: session 33).  A computed float is
cast only to floats of at most its precision: cast to float64, a float32 result allowed
1 ulp is checked in float64 ulps, and cast to an integer or bool it may truncate on the
other side of a boundary (a logcumsumexp over 2^21 steps cast to float64: session 34).

RP_ANY_PRODUCTS=1 lifts that rule for float cumprod and prod, for checks that compare
no values (tools/compile_programs.sh: whether every kernel compiles).

    tools/random_programs.py SEED COUNT DIR     writes DIR/p<seed>.sf for COUNT seeds
    tools/run_programs.sh SCANFUSE DIR [...]    runs each with --check (a summary)
"""
import os
import random
import sys

ANY_PRODUCTS = os.environ.get('RP_ANY_PRODUCTS') == '1'

FLOATS = ['float32', 'float16', 'bfloat16', 'float64']
INTS = ['int32', 'int64', 'uint8', 'int8', 'int16']
SIZES = [1, 2, 3, 5, 7, 16, 33, 64, 127, 300, 1000]
LONG = [20000, 40000, 70001]  # several look-back tiles on a GPU
MAX_ELEMENTS = 300000  # (but BIG)
BIG = [1000003, 2097152]
BIG_ODDS = 0.03

INT_RANK = {'bool': 0, 'uint8': 1, 'int8': 1, 'int16': 2, 'int32': 3, 'int64': 4}


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def promote(a, b):
    """PyTorch's result dtype of a binary op on tensors of dtypes a and b."""
    if a == b:
        return a
    fa, fb = a in FLOATS, b in FLOATS
    if fa and fb:
        if 'float64' in (a, b):
            return 'float64'
        return 'float32'  # float32 with a 16-bit float, or float16 with bfloat16
    if fa or fb:
        return a if fa else b
    if {a, b} == {'uint8', 'int8'}:
        return 'int16'
    return a if INT_RANK[a] >= INT_RANK[b] else b


def broadcastable(src, dst):
    return len(src) == len(dst) and all(s == d or s == 1 for s, d in zip(src, dst))


class Gen:
    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.vals = []  # (name, dtype, shape)
        self.lines = []
        self.n = 0

    def new(self, dt, shape):
        self.n += 1
        name = 'v%d' % self.n
        self.vals.append((name, dt, list(shape)))
        return name

    def inputs(self):
        r = self.r
        nd = r.choice([1, 2, 2, 3])
        shape = [r.choice(SIZES) for _ in range(nd)]
        if r.random() < 0.3:
            shape[r.randrange(nd)] = r.choice(LONG)
        elif r.random() < 0.03:
            shape[r.randrange(nd)] = 0  # empty
        while numel(shape) > MAX_ELEMENTS:
            shape = [r.choice(SIZES) for _ in range(nd)]
        # a few long 1-D inputs (hundreds of look-back tiles on a GPU), drawn from a
        # generator of their own so that the other seeds' programs stay as they were
        side = random.Random('long %d' % self.seed)
        if side.random() < BIG_ODDS:
            nd, shape = 1, [side.choice(BIG)]
        for i in range(r.choice([1, 1, 2])):
            dt = r.choice(FLOATS * 2 + INTS + ['bool'])
            sh = list(shape)
            if i > 0 and r.random() < 0.3:
                sh[0] = 1  # broadcast against the first input
            self.lines.append('input x%d: %s[%s]' % (i, dt, ', '.join(map(str, sh))))
            self.vals.append(('x%d' % i, dt, sh))

    def scan(self, name, dt, sh, dim):
        r = self.r
        op = r.choice(['cumsum'] * 3 + ['cumprod', 'cummax', 'cummin', 'logcumsumexp'])
        if op == 'logcumsumexp' and dt not in FLOATS:
            op = 'cumsum'
        if op == 'cumprod' and dt in FLOATS and not name.startswith('x') and not ANY_PRODUCTS:
            op = 'cumsum'  # (a product of computed floats: see the header)
        if op in ('cummax', 'cummin') and dt == 'bool':
            op = 'cumsum'
        args = [name, 'dim=%d' % dim]
        if r.random() < 0.4:
            args.append('exclusive=true')
        if r.random() < 0.4:
            args.append('reverse=true')
        out = dt
        if op in ('cumsum', 'cumprod'):
            if dt in ('bool', 'uint8', 'int8', 'int16', 'int32'):
                out = 'int64'
            if r.random() < 0.2:
                out = r.choice(['float32', 'float64', 'int64'])
                args.append('dtype=%s' % out)
        if op in ('cummax', 'cummin'):
            v = self.new(out, sh)
            i = self.new('int64', sh)
            self.lines.append('%s, %s = %s(%s)' % (v, i, op, ', '.join(args)))
        else:
            self.lines.append('%s = %s(%s)' % (self.new(out, sh), op, ', '.join(args)))

    def unary(self, name, dt, sh):
        r = self.r
        out = dt
        if dt == 'bool':
            op = r.choice(['logical_not'] * 3 + ['exp'])
        elif dt in FLOATS:
            ops = ['neg', 'abs', 'exp', 'expm1', 'sigmoid', 'tanh', 'relu', 'silu', 'sqrt', 'floor', 'ceil', 'isnan']
            if name.startswith('x'):
                # (ill-conditioned near zero: on inputs only, as div; see the header)
                ops += ['log', 'log1p', 'rsqrt', 'reciprocal']
            op = r.choice(ops)
        else:
            op = r.choice(['neg', 'abs', 'relu'] * 3 + ['sigmoid', 'tanh', 'sqrt', 'isnan'])
            if dt == 'uint8' and op == 'neg':
                op = 'abs'
        if op == 'isnan':
            out = 'bool'
        elif op in ('exp', 'sigmoid', 'tanh', 'sqrt') and dt not in FLOATS:
            out = 'float32'  # (an integer or bool operand gives float32)
        src = 'abs(%s)' % name if op in ('sqrt', 'log', 'log1p', 'rsqrt') and dt != 'bool' else name
        if op in ('exp', 'expm1', 'sigmoid', 'silu') and dt in FLOATS and not name.startswith('x'):
            # a computed float through tanh first (see the header): exp of an argument
            # of magnitude M turns its allowed absolute error into M times the relative
            src = 'tanh(%s)' % name
        self.lines.append('%s = %s(%s)' % (self.new(out, sh), op, src))

    def binary(self, name, dt, sh):
        r = self.r
        if r.random() < 0.3:  # a literal: a weak scalar, the tensor's dtype stays
            lit = r.choice(['2', '3', '-1']) if dt not in FLOATS else r.choice(['2', '0.5', '-1.5'])
            op = r.choice(['add', 'mul', 'maximum', 'minimum'] + ([] if dt == 'bool' else ['sub']))
            if dt in INTS and r.random() < 0.3:
                op, lit = r.choice(['remainder', 'floor_divide']), r.choice(['3', '-2', '7'])
            elif dt in FLOATS and r.random() < 0.15:
                op, lit = 'pow', r.choice(['2', '3'])
            out = 'int64' if dt == 'bool' else dt
            self.lines.append('%s = %s(%s, %s)' % (self.new(out, sh), op, name, lit))
            return
        other = r.choice([v for v in self.vals if v[2] == sh or broadcastable(v[2], sh)])
        if dt == 'bool' and other[1] == 'bool':
            op = r.choice(['logical_and', 'logical_or'])
            out = 'bool'
        elif dt not in FLOATS and other[1] not in FLOATS and r.random() < 0.3:
            op = r.choice(['eq', 'ne', 'lt', 'le', 'gt', 'ge'])  # exact on integers
            out = 'bool'
        elif dt in FLOATS and other[1] in FLOATS and other[0].startswith('x') and r.random() < 0.2:
            # (only by an input: dividing by a computed value near zero, a cancelling
            # cumsum, amplifies its allowed error past what --check allows the quotient)
            op = 'div'
            out = promote(dt, other[1])
        else:
            ops = ['add', 'mul', 'maximum', 'minimum']
            if 'bool' not in (dt, other[1]):
                ops.append('sub')
            op = r.choice(ops)
            out = promote(dt, other[1])
        self.lines.append('%s = %s(%s, %s)' % (self.new(out, sh), op, name, other[0]))

    def reduction(self, name, dt, sh, dim):
        r = self.r
        nd = len(sh)
        op = r.choice(['sum', 'sum', 'max', 'min', 'mean', 'argmax', 'argmin', 'prod'])
        if (op == 'mean' and dt not in FLOATS) or (numel(sh) == 0 and op not in ('sum', 'prod')) or \
                (op == 'prod' and dt in FLOATS and not name.startswith('x') and not ANY_PRODUCTS):
            op = 'sum'  # (max, min, argmax, argmin and mean of nothing are errors or NaN)
        keep = r.random() < 0.4
        kd = ', keepdim=true' if keep else ''
        if op in ('argmax', 'argmin'):
            dims = [dim % nd]
            args = '%s, dim=%d%s' % (name, dim, kd)
            out = 'int64'
        else:
            dims = sorted(set(r.randrange(nd) for _ in range(r.randint(1, nd))))
            args = '%s, dim=[%s]%s' % (name, ', '.join(map(str, dims)), kd)
            out = dt
            if op in ('sum', 'prod') and dt not in FLOATS:
                out = 'int64'
        shape = [1 if i in dims else s for i, s in enumerate(sh)] if keep else \
                [s for i, s in enumerate(sh) if i not in dims]
        self.lines.append('%s = %s(%s)' % (self.new(out, shape), op, args))

    def where(self, name, dt, sh):
        r = self.r
        conds = [v for v in self.vals if v[0].startswith('x') and v[2] == sh and v[1] != 'bool']
        if not conds:
            return
        c = r.choice(conds)
        other = r.choice([v for v in self.vals if v[2] == sh])
        cmp = r.choice(['lt', 'gt', 'ge', 'ne'])
        out = promote(dt, other[1])
        self.lines.append('%s = where(%s(%s, 0), %s, %s)' % (self.new(out, sh), cmp, c[0], name, other[0]))

    def view(self, name, dt, sh):
        r = self.r
        nd = len(sh)
        k = r.random()
        if k < 0.4:
            p = list(range(nd))
            r.shuffle(p)
            self.lines.append('%s = permute(%s, [%s])' % (self.new(dt, [sh[i] for i in p]), name, ', '.join(map(str, p))))
        elif k < 0.7:
            self.lines.append('%s = reshape(%s, [%d])' % (self.new(dt, [numel(sh)]), name, numel(sh)))
        elif k < 0.8 and 1 in sh:
            shape = [r.choice([2, 3, 7]) if s == 1 else s for s in sh]
            if numel(shape) <= MAX_ELEMENTS:
                self.lines.append('%s = expand(%s, [%s])' % (self.new(dt, shape), name, ', '.join(map(str, shape))))
        elif k < 0.9:
            if r.random() < 0.5:
                lo, hi = r.randint(0, 3), r.randint(0, 3)
                shape = list(sh)
                shape[-1] += lo + hi
                self.lines.append('%s = pad(%s, [%d, %d])' % (self.new(dt, shape), name, lo, hi))
            else:
                self.lines.append('%s = %s(%s, diagonal=%d)' % (self.new(dt, sh), r.choice(['triu', 'tril']), name,
                                                                r.randint(-2, 2)))
        else:
            d = r.randrange(nd)
            if sh[d] < 2:
                return
            a = r.randrange(sh[d] - 1)
            b = r.randint(a + 1, sh[d])
            shape = list(sh)
            shape[d] = b - a
            self.lines.append('%s = slice(%s, dim=%d, start=%d, end=%d)' % (self.new(dt, shape), name, d, a, b))

    def argmax_keep(self, name, sh, dim):
        """argmax along dim with keepdim (indices in range along it by construction): its
        name and shape"""
        d = dim % len(sh)
        shape = [1 if j == d else s for j, s in enumerate(sh)]
        i = self.new('int64', shape)
        self.lines.append('%s = argmax(%s, dim=%d, keepdim=true)' % (i, name, dim))
        return i, shape

    def index(self, name, dt, sh, dim):
        r = self.r
        nd = len(sh)
        d = dim % nd
        k = r.random()
        if dt == 'bool':  # (no index op here takes bool values)
            return
        if k < 0.3:
            kk = r.randint(1, min(sh[d], 8))
            shape = list(sh)
            shape[d] = kk
            v = self.new(dt, shape)
            i = self.new('int64', shape)
            largest = r.choice(['true', 'false'])
            self.lines.append('%s, %s = topk(%s, %d, dim=%d, largest=%s)' % (v, i, name, kk, dim, largest))
        elif k < 0.6:
            i, shape = self.argmax_keep(name, sh, dim)
            op = r.choice(['gather', 'take_along_dim'])
            if op == 'gather':
                self.lines.append('%s = gather(%s, %d, %s)' % (self.new(dt, shape), name, dim, i))
            else:
                self.lines.append('%s = take_along_dim(%s, %s, dim=%d)' % (self.new(dt, shape), name, i, dim))
        elif k < 0.7:
            desc = r.choice(['true', 'false'])
            self.lines.append('%s = argsort(%s, dim=%d, descending=%s, stable=true)' % (self.new('int64', sh), name, dim, desc))
        elif k < 0.8:
            # rows picked by the argmax of each column: indices in range along d
            other = [j for j in range(nd) if j != d]
            if not other:
                return
            i = self.new('int64', [sh[j] for j in other])
            self.lines.append('%s = argmax(%s, dim=%d)' % (i, name, d))
            if len(other) != 1:
                return
            shape = list(sh)
            shape[d] = sh[other[0]]
            if numel(shape) <= MAX_ELEMENTS:
                self.lines.append('%s = index_select(%s, %d, %s)' % (self.new(dt, shape), name, d, i))
        elif k < 0.85 and dt in FLOATS and nd == 2 and sh[0] * sh[0] <= MAX_ELEMENTS and sh[0] * sh[0] * sh[1] <= 20000000:
            t = self.new(dt, [sh[1], sh[0]])
            self.lines.append('%s = permute(%s, [1, 0])' % (t, name))
            self.lines.append('%s = matmul(%s, %s)' % (self.new(dt, [sh[0], sh[0]]), name, t))
        elif sh[d] <= 1000:
            # class ids in [0, sh[d]) from argmax over dim, then one_hot or bincount
            shape = [s for j, s in enumerate(sh) if j != d]
            i = self.new('int64', shape)
            self.lines.append('%s = argmax(%s, dim=%d)' % (i, name, dim))
            if r.random() < 0.5 and numel(shape) * sh[d] <= MAX_ELEMENTS:
                self.lines.append('%s = one_hot(%s, %d)' % (self.new('int64', shape + [sh[d]]), i, sh[d]))
            else:
                flat = i
                if len(shape) != 1:
                    flat = self.new('int64', [numel(shape)])
                    self.lines.append('%s = reshape(%s, [%d])' % (flat, i, numel(shape)))
                self.lines.append('%s = bincount(%s, %d)' % (self.new('int64', [sh[d]]), flat, sh[d]))

    def creation(self, name, dt, sh):
        """arange / iota along the last dim, or full of the value's shape, combined with it"""
        r = self.r
        n = sh[-1]
        k = r.random()
        if k < 0.5:
            c = self.new('int64', [n])
            if r.random() < 0.5:
                self.lines.append('%s = arange(0, %d)' % (c, n))
            else:
                self.lines.append('%s = iota(%d, dtype=int64)' % (c, n))
            if len(sh) > 1:
                c2 = self.new('int64', [1] * (len(sh) - 1) + [n])
                self.lines.append('%s = reshape(%s, [%s])' % (c2, c, ', '.join(['1'] * (len(sh) - 1) + [str(n)])))
                c = c2
            if dt != 'bool':
                self.lines.append('%s = add(%s, %s)' % (self.new(promote(dt, 'int64'), sh), name, c))
            else:
                self.lines.append('%s = where(%s, %s, 0)' % (self.new('int64', sh), name, c))
        else:
            fdt = r.choice(['float32', 'int64', 'bfloat16'])
            c = self.new(fdt, sh)
            self.lines.append('%s = full([%s], %s, dtype=%s)' % (c, ', '.join(map(str, sh)), r.choice(['2', '-1', '0']), fdt))
            if dt != 'bool':
                self.lines.append('%s = mul(%s, %s)' % (self.new(promote(dt, fdt), sh), name, c))

    def scatter(self, name, dt, sh, dim):
        """scatter of values at the argmax of each line along dim: one index a line, so the
        result does not depend on the order of writes"""
        i, shape = self.argmax_keep(name, sh, dim)
        g = self.new(dt, shape)
        self.lines.append('%s = gather(%s, %d, %s)' % (g, name, dim, i))
        src = g
        if dt in FLOATS or dt in ('int32', 'int64', 'int8'):
            src = self.new(dt, shape)
            self.lines.append('%s = neg(%s)' % (src, g))
        self.lines.append('%s = scatter(%s, %d, %s, %s)' % (self.new(dt, sh), name, dim, i, src))

    def program(self):
        r = self.r
        self.inputs()
        for _ in range(r.randint(2, 12)):
            name, dt, sh = r.choice(self.vals)
            nd = len(sh)
            dim = r.randrange(-nd, nd) if nd else 0
            k = r.random()
            if nd == 0:
                self.unary(name, dt, sh)
            elif k < 0.28:
                self.scan(name, dt, sh, dim)
            elif k < 0.40:
                self.unary(name, dt, sh)
            elif k < 0.55:
                self.binary(name, dt, sh)
            elif k < 0.67:
                self.reduction(name, dt, sh, dim)
            elif k < 0.74:
                to = r.choice(FLOATS + INTS + ['bool'])
                if dt in FLOATS and not name.startswith('x') and (to not in FLOATS or (to == 'float64') != (dt == 'float64')):
                    to = dt  # a computed float keeps its precision (see the header)
                self.lines.append('%s = cast(%s, %s)' % (self.new(to, sh), name, to))
            elif k < 0.81:
                self.where(name, dt, sh)
            elif k < 0.90:
                if nd >= 2:
                    self.view(name, dt, sh)
            elif numel(sh) > 0:  # (no index op on an empty tensor: argmax of nothing is an error)
                k2 = r.random()
                if k2 < 0.6:
                    self.index(name, dt, sh, dim)
                elif k2 < 0.8:
                    self.creation(name, dt, sh)
                elif dt != 'bool':
                    self.scatter(name, dt, sh, dim)
        outs = [v[0] for v in self.vals if v[0].startswith('v')]
        if not outs:
            return None
        outs = r.sample(outs, r.randint(1, min(5, len(outs))))
        self.lines.append('output ' + ', '.join(outs))
        return '\n'.join(self.lines) + '\n'


def main():
    usage = 'usage: random_programs.py SEED COUNT DIR (SEED, COUNT: integers >= 0; DIR exists)\n'
    if len(sys.argv) != 4 or not sys.argv[1].isdigit() or not sys.argv[2].isdigit():
        sys.stderr.write(usage)
        return 2
    seed, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    written = 0
    try:
        for s in range(seed, seed + count):
            text = Gen(s).program()
            if text:
                with open('%s/p%d.sf' % (out, s), 'w') as fp:
                    fp.write(text)
                written += 1
    except OSError as e:
        sys.stderr.write('random_programs.py: %s\n%s' % (e, usage))
        return 2
    print('%d programs in %s' % (written, out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
