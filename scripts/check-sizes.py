#!/usr/bin/env python3
"""Fails when a library file or a function is too long to read.

Measures every `.rs` file under crates/*/src: a file may have at most 800 lines and a
function at most 100, both counted in physical lines (blank lines and comments count).
Left out: `#[cfg(test)] mod` blocks (inline, or a file declared that way), files marked
`@generated` in their first lines, and the fuzz targets (crates/fuzz-targets and fuzz/);
tests/ directories and benches are outside src/ and not measured. A function runs from
the line of its `fn` to the line of its closing brace; a function nested in another
counts for both. Lists every offender, longest first; exit status 1 when there is one.
usage: check-sizes.py [WORKSPACE_ROOT] [--skip crates/NAME]... [--max-file N] [--max-fn N]
"""
import bisect,os,re,sys
args=sys.argv[1:]
root='.'; skips=[]; max_file=800; max_fn=100
while args:
    a=args.pop(0)
    if a=='--skip': skips.append(os.path.normpath(args.pop(0)))
    elif a=='--max-file': max_file=int(args.pop(0))
    elif a=='--max-fn': max_fn=int(args.pop(0))
    elif a.startswith('-'): sys.exit(__doc__)
    else: root=a
SKIP_CRATES={'fuzz-targets'}

def blank(src):
    """The source with comments and the contents of string and char literals replaced by
    spaces (newlines kept), so braces and keywords can be counted by position."""
    out=list(src); i=0; n=len(src)
    raw=re.compile(r'b?r(#*)"'); char=re.compile(r"'(\\.[^']*|[^\\'])'")
    def wipe(a,b):
        for k in range(a,b):
            if out[k]!='\n': out[k]=' '
    while i<n:
        c=src[i]
        if src.startswith('//',i):
            j=src.find('\n',i); j=n if j<0 else j
            wipe(i,j); i=j
        elif src.startswith('/*',i):
            depth=0; j=i
            while j<n:
                if src.startswith('/*',j): depth+=1; j+=2
                elif src.startswith('*/',j):
                    depth-=1; j+=2
                    if depth==0: break
                else: j+=1
            wipe(i,j); i=j
        elif c in 'br' and (m:=raw.match(src,i)) and (i==0 or not (src[i-1].isalnum() or src[i-1]=='_')):
            end='"'+m.group(1); j=src.find(end,m.end()); j=n if j<0 else j+len(end)
            wipe(i+1,j-1); i=j
        elif c=='"':
            j=i+1
            while j<n and src[j]!='"':
                j+=2 if src[j]=='\\' else 1
            wipe(i+1,j); i=j+1
        elif c=="'":
            # a char literal ('x', '\n', '\u{..}'), else a lifetime or a label
            m=char.match(src,i)
            if m: wipe(i+1,m.end()-1); i=m.end()
            else: i+=1
        else: i+=1
    return ''.join(out)

def close_of(text,open_at):
    """The index of the brace closing the one at `open_at`."""
    depth=0
    for k in range(open_at,len(text)):
        if text[k]=='{': depth+=1
        elif text[k]=='}':
            depth-=1
            if depth==0: return k
    return len(text)-1

TEST_MOD=re.compile(r'#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*([{;])')

def measure(path,text):
    """(lines outside test modules, [(function lines, name, line)], test module files)."""
    b=blank(text)
    starts=[m.end() for m in re.finditer('\n',b)]
    line_at=lambda k: bisect.bisect_right(starts,k)+1
    cut=[]; test_files=[]
    for m in TEST_MOD.finditer(b):
        if m.group(2)==';':
            test_files.append(m.group(1)); cut.append((m.start(),m.end()))
        else:
            cut.append((m.start(),close_of(b,m.end()-1)+1))
    kept=b; removed=0
    for a,z in cut:
        removed+=b.count('\n',a,z)
    lines=text.count('\n')+(0 if text.endswith('\n') else 1)-removed
    fns=[]
    for m in re.finditer(r'\bfn\s+([A-Za-z_][A-Za-z0-9_]*)',b):
        if any(a<=m.start()<z for a,z in cut): continue
        # the body's brace: the first `{` (or a `;`, no body) outside the signature's
        # parentheses and brackets
        depth=0; k=m.end()
        while k<len(b):
            ch=b[k]
            if ch in '([': depth+=1
            elif ch in ')]': depth-=1
            elif depth==0 and ch in '{;': break
            k+=1
        if k>=len(b) or b[k]==';': continue
        end=close_of(b,k)
        fns.append((line_at(end)-line_at(m.start())+1,m.group(1),line_at(m.start())))
    return lines,fns,test_files

offenders=[]
for crate in sorted(os.listdir(os.path.join(root,'crates'))):
    src=os.path.join(root,'crates',crate,'src')
    if crate in SKIP_CRATES or not os.path.isdir(src): continue
    if os.path.normpath(os.path.join('crates',crate)) in skips: continue
    test_paths=set()
    for dp,_,fs in sorted(os.walk(src)):
        for f in sorted(fs):
            if not f.endswith('.rs'): continue
            p=os.path.join(dp,f)
            text=open(p,encoding='utf-8').read()
            if '@generated' in '\n'.join(text.split('\n')[:5]): continue
            lines,fns,tests=measure(p,text)
            here=dp if f in ('mod.rs','lib.rs','main.rs') else p[:-3]
            for t in tests:
                test_paths.add(os.path.normpath(os.path.join(here,t+'.rs')))
                test_paths.add(os.path.normpath(os.path.join(here,t)))
            rel=os.path.relpath(p,root)
            offenders.append(('file',lines,rel,None,None,p))
            for n,name,line in fns:
                offenders.append(('fn',n,rel,name,line,p))
    # a file (or a folder) declared `#[cfg(test)] mod x;` is a test module
    def in_tests(p):
        q=os.path.normpath(p)
        return any(q==t or q.startswith(t+os.sep) for t in test_paths)
    offenders=[o for o in offenders if not (o[5].startswith(src+os.sep) and in_tests(o[5]))]
files=sorted((o for o in offenders if o[0]=='file' and o[1]>max_file),key=lambda o:-o[1])
fns=sorted((o for o in offenders if o[0]=='fn' and o[1]>max_fn),key=lambda o:-o[1])
for _,n,rel,_,_,_ in files:
    print(f'{rel}: {n} lines (at most {max_file})')
for _,n,rel,name,line,_ in fns:
    print(f'{rel}:{line}: fn {name}: {n} lines (at most {max_fn})')
if files or fns:
    sys.exit(1)
print(f'no file over {max_file} lines, no function over {max_fn}')
