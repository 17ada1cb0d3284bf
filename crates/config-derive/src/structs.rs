//! A struct: a section whose keys are its fields' camelCase names.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{DataStruct, DeriveInput, Fields};

use crate::attrs::{self, Case};
use crate::krate;

pub(crate) fn expand(input: &DeriveInput, data: &DataStruct) -> syn::Result<TokenStream> {
    let container = attrs::container(&input.attrs)?;
    if container.rename_all.is_some() {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "a section's keys are its fields' camelCase names: rename one with \
             #[config(rename = \"...\")]",
        ));
    }
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(Config)] takes a section without type or lifetime parameters",
        ));
    }
    let paths = krate::paths(container.krate.as_ref())?;
    let config = &paths.config;
    let name = &input.ident;
    let name_text = name.to_string();
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let fields = match &data.fields {
        Fields::Named(named) => &named.named,
        Fields::Unit => &syn::punctuated::Punctuated::new(),
        Fields::Unnamed(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "#[derive(Config)] takes a struct with named fields",
            ));
        }
    };

    let mut defaults = Vec::new();
    let mut keys = Vec::new();
    let mut sets = Vec::new();
    let mut serializes = Vec::new();
    let mut validates = Vec::new();
    let mut framework = None;
    for field in fields {
        let attrs = attrs::field(&field.attrs)?;
        let ident = field.ident.as_ref().expect("named fields");
        let ty = &field.ty;
        let default = match &attrs.default {
            Some(e) => quote!(#e),
            None => quote!(::core::default::Default::default()),
        };
        defaults.push(quote!(#ident: #default));
        if attrs.inline {
            keys.push(quote! {
                keys.extend_from_slice(<#ty as #config::__private::Section>::keys());
            });
            sets.push(quote! {
                if <#ty as #config::__private::Section>::set(&mut self.#ident, key, map)? {
                    return ::core::result::Result::Ok(true);
                }
            });
            serializes.push(quote! {
                <#ty as #config::__private::Section>::serialize_into(&self.#ident, map)?;
            });
            validates.push((
                String::new(),
                quote! {
                    <#ty as #config::__private::Section>::validate_fields(
                        &self.#ident, &mut *__parent, __report,
                    );
                },
            ));
            if attrs.framework {
                framework = Some((ident.clone(), ty.clone()));
            }
            continue;
        }
        let key = attrs
            .rename
            .clone()
            .unwrap_or_else(|| Case::Camel.apply(&ident.to_string()));
        keys.push(quote!(keys.push(#key);));
        sets.push(quote! {
            if key == #key {
                self.#ident = #config::__private::serde::de::MapAccess::next_value(map)?;
                return ::core::result::Result::Ok(true);
            }
        });
        serializes.push(quote! {
            #config::__private::serde::ser::SerializeMap::serialize_entry(map, #key, &self.#ident)?;
        });
        let checks = attrs.rules.field(attrs.skip, config);
        validates.push((
            ident.to_string(),
            quote! {
                {
                    #[allow(unused_mut, unused_variables)]
                    let mut __path = #config::__private::garde::util::nested_path!(__parent, #key);
                    let __value = &self.#ident;
                    #checks
                }
            },
        ));
    }
    // garde's derive checks the fields in the order of their names; the inline ones follow.
    validates.sort_by(|(a, _), (b, _)| match (a.is_empty(), b.is_empty()) {
        (false, false) => a.cmp(b),
        (a, b) => a.cmp(&b),
    });
    let validates = validates.into_iter().map(|(_, v)| v);
    let check = container.check.as_ref().map(|check| {
        quote! {
            if let ::core::result::Result::Err(__invalid) = (#check)(self) {
                __invalid.report(__parent, __report);
            }
        }
    });
    let refused = container
        .refuse
        .iter()
        .map(|(key, why)| quote!((#key, #why)));
    let framework = match (framework, &paths.toolkit) {
        (None, _) => TokenStream::new(),
        (Some((ident, ty)), Some(toolkit)) => quote! {
            impl #impl_generics #toolkit::config::Configuration for #name #type_generics #where_clause {
                fn framework(&self) -> &#ty {
                    &self.#ident
                }
            }
        },
        (Some((ident, _)), None) => {
            return Err(syn::Error::new_spanned(
                ident,
                "#[config(framework)] is ferrowizard's sections: it needs `ferrowizard` in \
                 [dependencies]",
            ));
        }
    };

    Ok(quote! {
        impl #impl_generics ::core::default::Default for #name #type_generics #where_clause {
            fn default() -> Self {
                Self { #(#defaults,)* }
            }
        }

        impl #impl_generics #config::__private::Section for #name #type_generics #where_clause {
            fn keys() -> &'static [&'static str] {
                static KEYS: ::std::sync::OnceLock<::std::vec::Vec<&'static str>> =
                    ::std::sync::OnceLock::new();
                KEYS.get_or_init(|| {
                    #[allow(unused_mut)]
                    let mut keys = ::std::vec::Vec::new();
                    #(#keys)*
                    keys
                })
            }

            fn refused() -> &'static [(&'static str, &'static str)] {
                &[#(#refused),*]
            }

            #[allow(unused_variables)]
            fn set<'de, A: #config::__private::serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
            ) -> ::core::result::Result<bool, A::Error> {
                #(#sets)*
                ::core::result::Result::Ok(false)
            }

            #[allow(unused_variables)]
            fn serialize_into<M: #config::__private::serde::ser::SerializeMap>(
                &self,
                map: &mut M,
            ) -> ::core::result::Result<(), M::Error> {
                #(#serializes)*
                ::core::result::Result::Ok(())
            }

            #[allow(unused_mut, unused_variables, clippy::needless_borrow)]
            fn validate_fields(
                &self,
                mut __parent: &mut dyn FnMut() -> #config::__private::garde::Path,
                __report: &mut #config::__private::garde::Report,
            ) {
                #(#validates)*
                #check
            }
        }

        impl<'de> #config::__private::serde::Deserialize<'de> for #name #type_generics #where_clause {
            fn deserialize<D: #config::__private::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                #config::__private::deserialize_section(deserializer, #name_text)
            }
        }

        impl #impl_generics #config::__private::serde::Serialize for #name #type_generics #where_clause {
            fn serialize<S: #config::__private::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                #config::__private::serialize_section(self, serializer)
            }
        }

        impl #impl_generics #config::__private::garde::Validate for #name #type_generics #where_clause {
            type Context = ();

            fn validate_into(
                &self,
                _: &(),
                parent: &mut dyn FnMut() -> #config::__private::garde::Path,
                report: &mut #config::__private::garde::Report,
            ) {
                <Self as #config::__private::Section>::validate_fields(self, parent, report);
            }
        }

        #framework
    })
}
