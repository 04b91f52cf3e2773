#!/usr/bin/env python3
"""Fails when a crate's modules import each other in a circle.

For every crate under crates/, builds the graph "module A uses module B" from the
`crate::...` paths in A's source (comments and the `#[cfg(test)] mod tests` block left
out; a path counts for the longest module prefix it names; a module's own submodules and
ancestors do not count) and reports every circle. The crate root counts as a module too:
a child that names an item the root defines (`crate::AppState`, not a name the root
re-exports from a submodule) uses the root, and the root uses each child whose path it
names (`child::x`, `use child::…`), so a child leaning on its root is a circle.
Exit status 1 when there is one.
usage: check-module-cycles.py [WORKSPACE_ROOT]
"""
import os,re,sys,collections
root=sys.argv[1] if len(sys.argv) > 1 else "."
found=False
for crate in sorted(os.listdir(root+'/crates')):
    src=f'{root}/crates/{crate}/src'
    if not os.path.isdir(src): continue
    mods={}
    for dp,_,fs in os.walk(src):
        for f in fs:
            if not f.endswith('.rs'): continue
            p=os.path.join(dp,f); rel=os.path.relpath(p,src)[:-3]
            parts=rel.split('/')
            if parts[-1] in ('mod','lib','main'): parts=parts[:-1]
            mods['::'.join(parts)]=open(p).read()
    # Names each module re-exports from its submodules (`pub use sub::{A, B}`):
    # (module, name) -> the submodule that defines the name.
    sub_reexp={}
    for mm,mtxt in mods.items():
        for mod_path,names in re.findall(r'pub use ([a-z_][a-z0-9_:]*)::\{?([^;}]*)\}?;', mtxt):
            if mod_path.startswith(('crate', 'super', 'self')) or mod_path.split('::')[0] not in [k.split('::')[-1] for k in mods if k.startswith(mm+'::' if mm else '') and k.count('::') == (mm.count('::')+1 if mm else 0)]:
                continue
            full=(mm+'::' if mm else '')+mod_path
            for n in re.split(r'[,\s]+', names):
                n=n.strip()
                if n and n != 'self':
                    sub_reexp[(mm,n)]=full
    reexp={n:full for (mm,n),full in sub_reexp.items() if mm==''}
    g=collections.defaultdict(set)
    for m,txt in mods.items():
        # Tests and comments do not count.
        txt=re.split(r'#\[cfg\(test\)\]\s*mod tests', txt)[0]
        txt='\n'.join(l for l in txt.split('\n') if not l.strip().startswith('//'))
        # `super::x` in module a::b names a::x
        parent='::'.join(m.split('::')[:-1])
        txt=re.sub(r'\bsuper::', 'crate::'+(parent+'::' if parent else ''), txt)
        # `crate::{A, B}` and `crate::A` where A is a root re-export name the defining module
        for grp in re.findall(r'crate::\{([^}]*)\}', txt):
            for n in re.split(r'[,\s]+', grp):
                if n in reexp and reexp[n] != m and not m.startswith(reexp[n]+'::'):
                    g[m].add(reexp[n])
        for n in re.findall(r'crate::([A-Z][A-Za-z0-9_]*)', txt):
            if n in reexp and reexp[n] != m and not m.startswith(reexp[n]+'::'):
                g[m].add(reexp[n])
        for u in re.findall(r'crate::([a-z_][a-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)', txt):
            segs=u.split('::')
            # longest prefix that is a module
            best=None
            for i in range(len(segs),0,-1):
                c='::'.join(segs[:i])
                if c in mods: best=c;break
            if best is not None:
                rest=segs[len(best.split('::')) if best else 0:]
                if rest and (best, rest[0]) in sub_reexp:
                    best=sub_reexp[(best, rest[0])]
            if best is not None and best!=m and not m.startswith(best+'::') :
                g[m].add(best)
    # The root and its children: a child naming an item the root defines (not a module,
    # not a re-export of a submodule's item) uses the root; the root uses every child
    # whose path it names outside its `mod` declarations.
    root_txt=re.split(r'#\[cfg\(test\)\]\s*mod tests', mods.get('',''))[0]
    root_txt='\n'.join(l for l in root_txt.split('\n') if not l.strip().startswith('//'))
    defined=set(re.findall(r'\b(?:struct|enum|fn|trait|type|const|static)\s+([A-Za-z_][A-Za-z0-9_]*)', root_txt))
    for m in mods:
        if m=='' or '::' in m: continue
        if re.search(r'(?<![A-Za-z0-9_:])'+re.escape(m)+r'::', root_txt):
            g[''].add(m)
    for m,txt in mods.items():
        if m=='': continue
        txt=re.split(r'#\[cfg\(test\)\]\s*mod tests', txt)[0]
        txt='\n'.join(l for l in txt.split('\n') if not l.strip().startswith('//'))
        names=set(re.findall(r'crate::([A-Za-z_][A-Za-z0-9_]*)\b(?!::)', txt))
        for grp in re.findall(r'crate::\{([^}]*)\}', txt):
            names.update(n for n in re.split(r'[,\s]+', grp) if n and '::' not in n)
        if any(n in defined and n not in reexp and n not in mods for n in names):
            g[m].add('')
    # find cycles via DFS
    color={}; stack=[]; cycles=[]
    def dfs(u):
        color[u]=1; stack.append(u)
        for v in sorted(g[u]):
            if color.get(v)==1: cycles.append(stack[stack.index(v):]+[v])
            elif v not in color: dfs(v)
        stack.pop(); color[u]=2
    for m in sorted(mods):
        if m not in color: dfs(m)
    if cycles:
        found=True
        for c in cycles:
            print(f'{crate}: import circle ' + ' -> '.join(x or '(crate root)' for x in c))
if found:
    sys.exit(1)
print('no import circles')
