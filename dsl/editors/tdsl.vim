" Vim syntax file
" Language:    tdsl (tensor-expression kernels for tdslc)
" Filenames:   *.tdsl
" Install:     copy to ~/.vim/syntax/tdsl.vim and add to your vimrc
"                autocmd BufRead,BufNewFile *.tdsl setfiletype tdsl

if exists("b:current_syntax")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match

" Keywords: the only reserved words.
syn keyword tdslKeyword     kernel schedule

" Dtypes (also the names of the casts f16(x), i32(x), ...; tf32 is a cast only).
syn keyword tdslType        f32 f16 bf16 f64 i8 i32 tf32

" Functions, highlighted only when called: name directly followed by '('.
syn match   tdslFunction    "\<\%(exp\|log\|sqrt\|rsqrt\|tanh\|sigmoid\|relu\|gelu\|erf\|abs\|pow\|max\|min\)\ze\s*("

" Assignment operators; max= and min= are one token (but not max== / min==).
syn match   tdslAssignOp    "\<\%(max\|min\)=\%(=\)\@!"
syn match   tdslAssignOp    "[+*]="
syn match   tdslOperator    "->\|&&\|||\|[<>=!]=\|[-+*/%<>!?]"

" Numbers: integers, then floats (1.0, 1., .5, 1e-3, 2.5E+4); a later match
" starting at the same column wins in Vim, so floats come last.
syn match   tdslInteger     "\<\d\+\>"
syn match   tdslFloat       "\<\d\+\.\d*\%([eE][-+]\=\d\+\)\="
syn match   tdslFloat       "\.\d\+\%([eE][-+]\=\d\+\)\=\>"
syn match   tdslFloat       "\<\d\+[eE][-+]\=\d\+\>"

" Kernel and schedule names.
syn match   tdslKernelName  "\%(\<kernel\s\+\)\@<=\h\w*"
syn match   tdslKernelName  "\%(\<schedule\s\+\)\@<=\h\w*"

" Comments: '#' and '//' to end of line.
syn keyword tdslTodo        contained TODO FIXME XXX NOTE
syn match   tdslComment     "#.*$"  contains=tdslTodo,@Spell
syn match   tdslComment     "//.*$" contains=tdslTodo,@Spell

hi def link tdslKeyword     Keyword
hi def link tdslType        Type
hi def link tdslFunction    Function
hi def link tdslAssignOp    Operator
hi def link tdslOperator    Operator
hi def link tdslFloat       Float
hi def link tdslInteger     Number
hi def link tdslKernelName  Identifier
hi def link tdslComment     Comment
hi def link tdslTodo        Todo

let b:current_syntax = "tdsl"

let &cpo = s:cpo_save
unlet s:cpo_save
