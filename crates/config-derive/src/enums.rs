//! An enum: a choice written as a name (`target: stdout`) when its variants carry nothing, or
//! as a section with a `type` key (`{type: file, ...}`) when they carry one.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{DataEnum, DeriveInput, Fields};

use crate::attrs::{self, Case};
use crate::krate;

pub(crate) fn expand(input: &DeriveInput, data: &DataEnum) -> syn::Result<TokenStream> {
    let container = attrs::container(&input.attrs)?;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(Config)] takes a choice without type or lifetime parameters",
        ));
    }
    let paths = krate::paths(container.krate.as_ref())?;
    let config = &paths.config;
    let name = &input.ident;
    let name_text = name.to_string();
    let case = container.rename_all.unwrap_or(Case::Camel);

    let mut names = Vec::new();
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    let mut validates = Vec::new();
    for (index, variant) in data.variants.iter().enumerate() {
        let attrs = attrs::variant(&variant.attrs)?;
        let ident = &variant.ident;
        let text = attrs
            .rename
            .unwrap_or_else(|| case.apply(&ident.to_string()));
        let index = index as u32;
        match &variant.fields {
            Fields::Unit => {
                reads.push(quote! {
                    #index => {
                        #config::__private::serde::de::VariantAccess::unit_variant(variant)?;
                        ::core::result::Result::Ok(#name::#ident)
                    }
                });
                writes.push(quote! {
                    #name::#ident => #config::__private::serde::Serializer::serialize_unit_variant(
                        serializer, #name_text, #index, #text,
                    ),
                });
                validates.push(quote!(#name::#ident => {}));
            }
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                reads.push(quote! {
                    #index => #config::__private::serde::de::VariantAccess::newtype_variant(variant)
                        .map(#name::#ident),
                });
                writes.push(quote! {
                    #name::#ident(body) => #config::serialize_tagged(serializer, #text, body),
                });
                validates.push(quote! {
                    #name::#ident(body) => {
                        #[allow(unused_imports)]
                        use #config::__private::{DiveInto as _, DiveNone as _};
                        (&#config::__private::Dive(body)).dive(&mut *parent, report);
                    }
                });
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    variant,
                    "a variant of a Config enum is a name (`Stdout`) or carries one section \
                     (`File(FileAppenderFactory)`)",
                ));
            }
        }
        names.push(text);
    }
    let check = container.check.as_ref().map(|check| {
        quote! {
            if let ::core::result::Result::Err(__invalid) = (#check)(self) {
                __invalid.report(parent, report);
            }
        }
    });

    Ok(quote! {
        impl<'de> #config::__private::serde::Deserialize<'de> for #name {
            fn deserialize<D: #config::__private::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                const NAMES: &[&str] = &[#(#names),*];
                struct Choice;
                impl<'de> #config::__private::serde::de::Visitor<'de> for Choice {
                    type Value = #name;

                    fn expecting(
                        &self,
                        f: &mut ::core::fmt::Formatter<'_>,
                    ) -> ::core::fmt::Result {
                        f.write_str(::core::concat!("one of the names of ", #name_text))
                    }

                    fn visit_enum<A: #config::__private::serde::de::EnumAccess<'de>>(
                        self,
                        data: A,
                    ) -> ::core::result::Result<#name, A::Error> {
                        let (index, variant) = #config::__private::serde::de::EnumAccess::variant_seed(
                            data,
                            #config::__private::VariantSeed(NAMES),
                        )?;
                        match index {
                            #(#reads)*
                            _ => ::core::unreachable!("VariantSeed gives the index of a name"),
                        }
                    }
                }
                #config::__private::serde::Deserializer::deserialize_enum(
                    deserializer, #name_text, NAMES, Choice,
                )
            }
        }

        impl #config::__private::serde::Serialize for #name {
            fn serialize<S: #config::__private::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                match self {
                    #(#writes)*
                }
            }
        }

        impl #config::__private::garde::Validate for #name {
            type Context = ();

            #[allow(unused_variables, unused_mut)]
            fn validate_into(
                &self,
                _: &(),
                mut parent: &mut dyn FnMut() -> #config::__private::garde::Path,
                report: &mut #config::__private::garde::Report,
            ) {
                match self {
                    #(#validates)*
                }
                #check
            }
        }
    })
}
