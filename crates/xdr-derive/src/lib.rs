//! `#[derive(Pack, Unpack)]` for XDR (RFC 4506) types.
//!
//! * Structs (named or tuple): fields in declaration order (§4.14).
//!   `#[xdr(max = N)]` on a field bounds a variable-length item (`x<N>`).
//! * Enums whose variants are all units: an XDR `enum` (§4.3). Every
//!   variant needs an explicit Rust discriminant; the wire value is
//!   `Variant as u32`. (An enum that must accept unknown values is written
//!   as a union whose arms are all void, with a default arm.)
//! * Other enums: a discriminated union (§4.15). Each variant carries
//!   `#[xdr(value = EXPR)]` (any constant expression castable to `u32`) and is
//!   a unit (void arm) or a one-field tuple (the arm's data). One variant may
//!   be `#[xdr(default)] Name(D)` where `D: xdr::Discriminant` holds the
//!   discriminant for a `default: void` arm. A union also gets
//!   `xdr::Union`, its discriminant as sent. On the enum,
//!   `#[xdr(each = f, returns = T, otherwise = EXPR)]` adds
//!   `pub fn f(&self) -> T` calling `f()` on the arm's data (void and
//!   default arms give `EXPR`): for example an operation result's status.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::{parse_macro_input, Data, DeriveInput, Expr, Fields};

#[derive(Default)]
struct Attrs {
    max: Option<Expr>,
    value: Option<Expr>,
    default: bool,
}

fn attrs(list: &[syn::Attribute]) -> syn::Result<Attrs> {
    let mut a = Attrs::default();
    for attr in list {
        if !attr.path().is_ident("xdr") {
            continue;
        }
        attr.parse_nested_meta(|m| {
            if m.path.is_ident("max") {
                a.max = Some(m.value()?.parse()?);
            } else if m.path.is_ident("value") {
                a.value = Some(m.value()?.parse()?);
            } else if m.path.is_ident("default") {
                a.default = true;
            } else {
                return Err(m.error("unknown xdr attribute"));
            }
            Ok(())
        })?;
    }
    Ok(a)
}

#[proc_macro_derive(Pack, attributes(xdr))]
pub fn derive_pack(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match pack(&input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[proc_macro_derive(Unpack, attributes(xdr))]
pub fn derive_unpack(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match unpack(&input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The enum-level `#[xdr(each = f, returns = T, otherwise = EXPR)]`.
struct Each {
    method: syn::Ident,
    returns: syn::Type,
    otherwise: Expr,
}

fn each_attr(list: &[syn::Attribute]) -> syn::Result<Option<Each>> {
    let (mut method, mut returns, mut otherwise) = (None, None, None);
    for attr in list {
        if !attr.path().is_ident("xdr") {
            continue;
        }
        attr.parse_nested_meta(|m| {
            if m.path.is_ident("each") {
                method = Some(m.value()?.parse()?);
            } else if m.path.is_ident("returns") {
                returns = Some(m.value()?.parse()?);
            } else if m.path.is_ident("otherwise") {
                otherwise = Some(m.value()?.parse()?);
            } else {
                return Err(m.error("unknown xdr attribute on an enum"));
            }
            Ok(())
        })?;
    }
    match (method, returns, otherwise) {
        (None, None, None) => Ok(None),
        (Some(method), Some(returns), Some(otherwise)) => Ok(Some(Each {
            method,
            returns,
            otherwise,
        })),
        _ => Err(syn::Error::new_spanned(
            &list[0],
            "#[xdr(each = f, returns = T, otherwise = EXPR)] needs all three",
        )),
    }
}

/// For a union: `xdr::Union`, and the `each` forwarding method if asked.
fn union_extras(input: &DeriveInput, en: &syn::DataEnum) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let (ig, tg, wc) = input.generics.split_for_impl();
    let mut disc = Vec::new();
    for v in &en.variants {
        let vi = &v.ident;
        let a = attrs(&v.attrs)?;
        if a.default {
            disc.push(quote! { Self::#vi(d) => ::xdr::Discriminant::to_u32(d), });
            continue;
        }
        let Some(val) = a.value else { continue };
        let pat = match v.fields.len() {
            0 => quote! { Self::#vi },
            _ => quote! { Self::#vi(..) },
        };
        disc.push(quote! { #pat => (#val) as u32, });
    }
    let mut out = quote! {
        impl #ig ::xdr::Union for #name #tg #wc {
            fn discriminant(&self) -> u32 { match self { #(#disc)* } }
        }
    };
    if let Some(Each {
        method,
        returns,
        otherwise,
    }) = each_attr(&input.attrs)?
    {
        let mut arms = Vec::new();
        for v in &en.variants {
            let vi = &v.ident;
            let data = v.fields.len() == 1 && !attrs(&v.attrs)?.default;
            arms.push(if data {
                quote! { Self::#vi(x) => x.#method(), }
            } else if v.fields.is_empty() {
                quote! { Self::#vi => #otherwise, }
            } else {
                quote! { Self::#vi(..) => #otherwise, }
            });
        }
        let doc = format!("Each arm's `{method}()`.");
        out.extend(quote! {
            impl #ig #name #tg #wc {
                #[doc = #doc]
                pub fn #method(&self) -> #returns { match self { #(#arms)* } }
            }
        });
    }
    Ok(out)
}

fn is_c_like(data: &syn::DataEnum) -> bool {
    data.variants
        .iter()
        .all(|v| matches!(v.fields, Fields::Unit) && v.discriminant.is_some())
}

fn field_bindings(fields: &Fields) -> Vec<syn::Ident> {
    (0..fields.len()).map(|i| format_ident!("f{}", i)).collect()
}

fn pack(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let (ig, tg, wc) = input.generics.split_for_impl();
    let body = match &input.data {
        Data::Struct(s) => {
            let names = field_bindings(&s.fields);
            let destructure = match &s.fields {
                Fields::Named(n) => {
                    let idents = n.named.iter().map(|f| f.ident.clone());
                    quote! { let Self { #(#idents: #names),* } = self; }
                }
                Fields::Unnamed(_) => quote! { let Self( #(#names),* ) = self; },
                Fields::Unit => quote! {},
            };
            quote! { #destructure #( ::xdr::Pack::pack(#names, e); )* }
        }
        Data::Enum(en) if is_c_like(en) => {
            quote! { e.u32(::xdr::Discriminant::to_u32(self)) }
        }
        Data::Enum(en) => {
            let mut arms = Vec::new();
            for v in &en.variants {
                let a = attrs(&v.attrs)?;
                let vi = &v.ident;
                if a.default {
                    arms.push(quote! { Self::#vi(d) => e.u32(::xdr::Discriminant::to_u32(d)), });
                    continue;
                }
                let val = a.value.ok_or_else(|| {
                    syn::Error::new_spanned(v, "union arm needs #[xdr(value = ...)]")
                })?;
                match v.fields.len() {
                    0 => arms.push(quote! { Self::#vi => e.u32((#val) as u32), }),
                    1 => arms.push(quote! {
                        Self::#vi(x) => { e.u32((#val) as u32); ::xdr::Pack::pack(x, e); }
                    }),
                    _ => return Err(syn::Error::new_spanned(v, "union arm: at most one field")),
                }
            }
            quote! { match self { #(#arms)* } }
        }
        Data::Union(_) => return Err(syn::Error::new_spanned(input, "unions unsupported")),
    };
    let extras = match &input.data {
        Data::Enum(en) if !is_c_like(en) => union_extras(input, en)?,
        _ => quote! {},
    };
    Ok(quote! {
        impl #ig ::xdr::Pack for #name #tg #wc {
            #[allow(unused_variables)]
            fn pack(&self, e: &mut ::xdr::Encoder) { #body }
        }
        #extras
    })
}

fn unpack_field(f: &syn::Field) -> syn::Result<TokenStream2> {
    let a = attrs(&f.attrs)?;
    let ty = &f.ty;
    Ok(match a.max {
        Some(m) => quote! { <#ty as ::xdr::UnpackBounded>::unpack_bounded(d, (#m) as usize)? },
        None => quote! { <#ty as ::xdr::Unpack>::unpack(d)? },
    })
}

fn unpack(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let name_str = name.to_string();
    let (ig, tg, wc) = input.generics.split_for_impl();
    let mut min_wire = quote! { 4 };
    let body = match &input.data {
        Data::Struct(s) => {
            let tys = s.fields.iter().map(|f| &f.ty);
            min_wire = quote! { 0 #( + <#tys as ::xdr::Unpack>::MIN_WIRE )* };
            let vals = s
                .fields
                .iter()
                .map(unpack_field)
                .collect::<syn::Result<Vec<_>>>()?;
            match &s.fields {
                Fields::Named(n) => {
                    let idents = n.named.iter().map(|f| f.ident.clone());
                    quote! { Ok(Self { #(#idents: #vals),* }) }
                }
                Fields::Unnamed(_) => quote! { Ok(Self( #(#vals),* )) },
                Fields::Unit => quote! { Ok(Self) },
            }
        }
        Data::Enum(en) if is_c_like(en) => {
            quote! { <Self as ::xdr::Discriminant>::from_u32(d.u32()?) }
        }
        Data::Enum(en) => {
            let mut checks = Vec::new();
            let mut fallback = quote! { Err(::xdr::Error::BadDiscriminant(v, #name_str)) };
            for v in &en.variants {
                let a = attrs(&v.attrs)?;
                let vi = &v.ident;
                if a.default {
                    fallback = quote! { Ok(Self::#vi(::xdr::Discriminant::from_u32(v)?)) };
                    continue;
                }
                let val = a.value.ok_or_else(|| {
                    syn::Error::new_spanned(v, "union arm needs #[xdr(value = ...)]")
                })?;
                let make = match v.fields.iter().next() {
                    None => quote! { Self::#vi },
                    Some(f) => {
                        let fv = unpack_field(f)?;
                        quote! { Self::#vi(#fv) }
                    }
                };
                checks.push(quote! { if v == (#val) as u32 { return Ok(#make); } });
            }
            quote! { let v = d.u32()?; #(#checks)* #fallback }
        }
        Data::Union(_) => return Err(syn::Error::new_spanned(input, "unions unsupported")),
    };
    let disc = match &input.data {
        Data::Enum(en) if is_c_like(en) => discriminant(input, en),
        _ => quote! {},
    };
    Ok(quote! {
        impl #ig ::xdr::Unpack for #name #tg #wc {
            fn unpack(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> { #body }
            const MIN_WIRE: usize = #min_wire;
        }
        #disc
    })
}

/// `xdr::Discriminant` for a C-like enum: its wire value both ways.
fn discriminant(input: &DeriveInput, en: &syn::DataEnum) -> TokenStream2 {
    let name = &input.ident;
    let name_str = name.to_string();
    let (ig, tg, wc) = input.generics.split_for_impl();
    let mut checks = Vec::new();
    let mut arms = Vec::new();
    for v in &en.variants {
        let vi = &v.ident;
        checks.push(quote! { if v == Self::#vi as u32 { return Ok(Self::#vi); } });
        arms.push(quote! { Self::#vi => Self::#vi as u32, });
    }
    quote! {
        impl #ig ::xdr::Discriminant for #name #tg #wc {
            fn from_u32(v: u32) -> ::xdr::Result<Self> {
                #(#checks)*
                Err(::xdr::Error::BadDiscriminant(v, #name_str))
            }
            fn to_u32(&self) -> u32 { match self { #(#arms)* } }
        }
    }
}
