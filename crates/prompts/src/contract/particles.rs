//! Particles: reads, visibility, listings, versions, changes and deletion.

use super::*;

/// Particles and their first versions read back exactly as stored (any text, microsecond
/// timestamps), system ones also by slug; unknown ids, slugs and numbers are absent.
pub async fn particles_read_back_unchanged(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let mut mine = particle(&org(&acme), "Rôle – Ünïcode ✓ 🚀", Category::Role, at(0));
    mine.description = String::new();
    mine.latest.content =
        "Du bist ein hilfreicher Assistent. 你好 — \"quoted\" 'text'\n\ttabs".into();
    mine.latest.token_count = 4_000_000;
    mine.updated_at = at(1) + micros(1);
    f.particles.insert(&mine, &[]).await.unwrap();
    assert_eq!(
        f.particles.get(&acme, &mine.id).await.unwrap(),
        Some(mine.clone())
    );
    assert_eq!(
        f.particles.version(&acme, &mine.id, 1).await.unwrap(),
        Some(mine.latest.clone())
    );
    assert_eq!(
        f.particles
            .version_by_id(&acme, &mine.latest.id)
            .await
            .unwrap(),
        Some(mine.latest.clone())
    );

    let mut system = particle(&Owner::System, "System tone", Category::Tone, at(2));
    system.slug = Some("system-tone".into());
    f.particles.insert(&system, &[]).await.unwrap();
    assert_eq!(
        f.particles.get_system("system-tone").await.unwrap(),
        Some(system.clone())
    );
    assert_eq!(
        f.particles.get(&acme, &system.id).await.unwrap(),
        Some(system)
    );
    assert_eq!(f.particles.get_system("unknown").await.unwrap(), None);
    assert_eq!(
        f.particles
            .get(&acme, &ParticleId::generate())
            .await
            .unwrap(),
        None
    );
    assert_eq!(f.particles.version(&acme, &mine.id, 2).await.unwrap(), None);
    assert_eq!(
        f.particles
            .version(&acme, &mine.id, u32::MAX)
            .await
            .unwrap(),
        None
    );
}

/// An organization sees its own particles and the system's, never another organization's;
/// listings and counts are per owner.
pub async fn particles_are_visible_to_their_organization_and_system_ones_to_all(
    stores: &impl PromptStores,
) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let theirs = f
        .particle(&org(&acme), "acme role", Category::Role, at(0))
        .await;
    let system = f
        .particle(&Owner::System, "system role", Category::Role, at(1))
        .await;
    let page = PageRequest::first(Limit::DEFAULT);

    assert_eq!(f.particles.get(&globex, &theirs.id).await.unwrap(), None);
    assert!(
        f.particles
            .versions(&globex, &theirs.id, &page)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.particles.version(&globex, &theirs.id, 1).await.unwrap(),
        None
    );
    assert_eq!(
        f.particles
            .version_by_id(&globex, &theirs.latest.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        f.particles
            .versions(&acme, &theirs.id, &page)
            .await
            .unwrap(),
        vec![theirs.latest.clone()]
    );

    for viewer in [&acme, &globex] {
        assert_eq!(
            f.particles.get(viewer, &system.id).await.unwrap(),
            Some(system.clone())
        );
        assert_eq!(
            f.particles
                .version_by_id(viewer, &system.latest.id)
                .await
                .unwrap(),
            Some(system.latest.clone())
        );
        assert_eq!(
            f.particles
                .versions(viewer, &system.id, &page)
                .await
                .unwrap(),
            vec![system.latest.clone()]
        );
    }

    // Listings are per owner: an organization's excludes the system's particles.
    assert_eq!(
        f.particles
            .list(&org(&acme), None, &first(10))
            .await
            .unwrap(),
        vec![theirs.clone()]
    );
    assert!(
        f.particles
            .list(&org(&globex), None, &first(10))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.particles
            .list(&Owner::System, None, &first(10))
            .await
            .unwrap(),
        vec![system.clone()]
    );
    assert_eq!(f.particles.count(&org(&acme), None).await.unwrap(), 1);
    assert_eq!(f.particles.count(&org(&globex), None).await.unwrap(), 0);
    assert_eq!(f.particles.count(&Owner::System, None).await.unwrap(), 1);
}

/// Particle listings are ordered by id, paged with one extra row, and filtered by category.
pub async fn particle_lists_are_ordered_paged_and_filtered(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let mut mine = Vec::new();
    for i in 0..6 {
        let category = if i % 2 == 0 {
            Category::Role
        } else {
            Category::Format
        };
        mine.push(
            f.particle(&org(&acme), &format!("p{i}"), category, at(i))
                .await,
        );
        // Interleaved particles of other owners never show up.
        f.particle(&org(&globex), &format!("g{i}"), category, at(i))
            .await;
        f.particle(&Owner::System, &format!("s{i}"), category, at(i))
            .await;
    }
    let owner = org(&acme);
    let limit = Limit::new(2).unwrap();
    assert_eq!(
        f.particles
            .list(&owner, None, &PageRequest::first(limit))
            .await
            .unwrap(),
        mine[..3],
        "a page fetches one extra row to tell whether more exist"
    );
    let after = |i: usize| PageRequest {
        limit,
        after: Some(mine[i].id.clone()),
    };
    assert_eq!(
        f.particles.list(&owner, None, &after(1)).await.unwrap(),
        mine[2..5]
    );
    assert_eq!(
        f.particles.list(&owner, None, &after(4)).await.unwrap(),
        mine[5..]
    );
    assert!(
        f.particles
            .list(&owner, None, &after(5))
            .await
            .unwrap()
            .is_empty()
    );

    let roles: Vec<Particle> = mine.iter().step_by(2).cloned().collect();
    let formats: Vec<Particle> = mine.iter().skip(1).step_by(2).cloned().collect();
    assert_eq!(
        ids(&f
            .particles
            .list(&owner, Some(Category::Role), &first(10))
            .await
            .unwrap()),
        ids(&roles)
    );
    assert_eq!(
        ids(&f
            .particles
            .list(&owner, Some(Category::Format), &after(0))
            .await
            .unwrap()),
        ids(&formats)
    );
    assert!(
        f.particles
            .list(&owner, Some(Category::Tone), &first(10))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.particles.count(&owner, None).await.unwrap(), 6);
    assert_eq!(
        f.particles
            .count(&owner, Some(Category::Role))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        f.particles
            .count(&owner, Some(Category::Tone))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        f.particles
            .count(&Owner::System, Some(Category::Format))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        f.particles
            .count(&org(&OrganizationId::generate()), None)
            .await
            .unwrap(),
        0
    );
}

/// `add_version` appends only the owner's next number; versions read back in order, paged
/// by number.
pub async fn add_version_appends_only_the_next_number(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let mut p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let v1 = p.latest.clone();

    let stale_owner = version(&p.id, 2, "theirs", at(1));
    assert!(
        !f.particles
            .add_version(&org(&globex), &stale_owner, &[])
            .await
            .unwrap()
    );
    assert!(
        !f.particles
            .add_version(&Owner::System, &stale_owner, &[])
            .await
            .unwrap()
    );
    for number in [0, 1, 3, u32::MAX] {
        let wrong = version(&p.id, number, "wrong number", at(1));
        assert!(
            !f.particles.add_version(&owner, &wrong, &[]).await.unwrap(),
            "version {number} is not next"
        );
    }
    let unknown = version(&ParticleId::generate(), 2, "nobody's", at(1));
    assert!(
        !f.particles
            .add_version(&owner, &unknown, &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    let v2 = f.next_version(&mut p, "second – ✓", at(2)).await;
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );
    assert_eq!(p.updated_at, at(2));
    let again = version(&p.id, 2, "lost the race", at(3));
    assert!(!f.particles.add_version(&owner, &again, &[]).await.unwrap());
    let v3 = f.next_version(&mut p, "third", at(4)).await;
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    let all = PageRequest::first(Limit::DEFAULT);
    assert_eq!(
        f.particles.versions(&acme, &p.id, &all).await.unwrap(),
        vec![v1.clone(), v2.clone(), v3.clone()]
    );
    let limit = Limit::new(1).unwrap();
    assert_eq!(
        f.particles
            .versions(
                &acme,
                &p.id,
                &PageRequest {
                    limit,
                    after: Some(1)
                }
            )
            .await
            .unwrap(),
        vec![v2.clone(), v3.clone()]
    );
    assert!(
        f.particles
            .versions(
                &acme,
                &p.id,
                &PageRequest {
                    limit,
                    after: Some(3)
                }
            )
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        f.particles
            .versions(
                &acme,
                &p.id,
                &PageRequest {
                    limit,
                    after: Some(u32::MAX)
                }
            )
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.particles.version(&acme, &p.id, 2).await.unwrap(),
        Some(v2.clone())
    );
    assert_eq!(
        f.particles.version_by_id(&acme, &v3.id).await.unwrap(),
        Some(v3)
    );
    assert_eq!(
        f.particles
            .version_by_id(&acme, &ParticleVersionId::generate())
            .await
            .unwrap(),
        None
    );
}

/// Of concurrent writers of the same next version, exactly one wins.
pub async fn concurrent_writers_of_one_version_number_have_one_winner(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let store = f.particles.clone();
            let owner = owner.clone();
            let candidate = version(&p.id, 2, &format!("writer {i}"), at(1) + micros(i));
            tokio::spawn(async move {
                let won = store.add_version(&owner, &candidate, &[]).await.unwrap();
                (won, candidate)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for writer in writers {
        let (won, candidate) = writer.await.unwrap();
        if won {
            winners.push(candidate);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer adds version 2");
    let stored = f.particles.get(&acme, &p.id).await.unwrap().unwrap();
    assert_eq!(stored.latest, winners[0]);
    assert_eq!(
        f.particles
            .versions(&acme, &p.id, &PageRequest::first(Limit::DEFAULT))
            .await
            .unwrap(),
        vec![p.latest.clone(), winners[0].clone()]
    );
}

/// `update_details` changes only the owner's live particles (the system changes its own).
pub async fn update_details_changes_only_the_owners_live_particles(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let mut p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let system = f
        .particle(&Owner::System, "system", Category::Tone, at(0))
        .await;

    assert!(
        !f.particles
            .update_details(&org(&globex), &p.id, "stolen", "", at(1), &[])
            .await
            .unwrap()
    );
    assert!(
        !f.particles
            .update_details(&owner, &system.id, "stolen", "", at(1), &[])
            .await
            .unwrap(),
        "an organization cannot change a system particle"
    );
    assert!(
        !f.particles
            .update_details(&owner, &ParticleId::generate(), "x", "", at(1), &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    let later = at(5) + micros(7);
    assert!(
        f.particles
            .update_details(&owner, &p.id, "Renamed ✓", "", later, &[])
            .await
            .unwrap()
    );
    p.name = "Renamed ✓".into();
    p.description = String::new();
    p.updated_at = later;
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    assert!(
        f.particles
            .update_details(&Owner::System, &system.id, "System", "changed", later, &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.particles
            .get(&acme, &system.id)
            .await
            .unwrap()
            .unwrap()
            .description,
        "changed"
    );

    assert_eq!(
        f.particles.delete(&owner, &p.id, at(6), &[]).await.unwrap(),
        ParticleDeletion::Deleted
    );
    assert!(
        !f.particles
            .update_details(&owner, &p.id, "ghost", "", at(7), &[])
            .await
            .unwrap()
    );
}

/// Deleting a particle is refused, naming the prompts, while any prompt places it; another
/// organization learns nothing.
pub async fn delete_is_refused_while_a_prompt_places_the_particle(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let (first, placed_in_first) = f
        .prompt(
            &owner,
            "first",
            at(1),
            &[(&p, 0, None), (&p, 1, Some(&p.latest))],
        )
        .await;
    let (second, placed_in_second) = f.prompt(&owner, "second", at(1), &[(&p, 0, None)]).await;

    let mut expected = vec![first.id.clone(), second.id.clone()];
    expected.sort();
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(2), &[]).await.unwrap(),
        ParticleDeletion::Referenced(expected)
    );
    assert_eq!(
        f.particles
            .delete(&org(&globex), &p.id, at(2), &[])
            .await
            .unwrap(),
        ParticleDeletion::NotFound,
        "another organization learns nothing, not even that it is in use"
    );
    assert_eq!(
        f.particles.get(&acme, &p.id).await.unwrap(),
        Some(p.clone())
    );

    for (prompt, placements) in [(&first, &placed_in_first), (&second, &placed_in_second)] {
        for placement in placements {
            assert!(
                f.prompts
                    .remove_association(&owner, &prompt.id, &placement.id, at(3), &[])
                    .await
                    .unwrap()
            );
        }
    }
    assert_eq!(
        f.particles
            .delete(&org(&globex), &p.id, at(4), &[])
            .await
            .unwrap(),
        ParticleDeletion::NotFound
    );
    assert_eq!(
        f.particles
            .delete(&Owner::System, &p.id, at(4), &[])
            .await
            .unwrap(),
        ParticleDeletion::NotFound
    );
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(4), &[]).await.unwrap(),
        ParticleDeletion::Deleted
    );
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(5), &[]).await.unwrap(),
        ParticleDeletion::NotFound,
        "deleted once"
    );
    assert_eq!(
        f.particles
            .delete(&owner, &ParticleId::generate(), at(5), &[])
            .await
            .unwrap(),
        ParticleDeletion::NotFound
    );
}

/// A deleted particle disappears from reads and takes no more versions, but past layouts
/// still resolve its versions.
pub async fn deleted_particles_are_invisible_but_resolve_past_layouts(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let mut p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let v1 = p.latest.clone();
    let (prompt, placements) = f
        .prompt(
            &owner,
            "prompt",
            at(1),
            &[(&p, 0, None), (&p, 1, Some(&v1))],
        )
        .await;
    let v2 = f.next_version(&mut p, "second", at(2)).await;
    for placement in &placements {
        assert!(
            f.prompts
                .remove_association(&owner, &prompt.id, &placement.id, at(3), &[])
                .await
                .unwrap()
        );
    }
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(4), &[]).await.unwrap(),
        ParticleDeletion::Deleted
    );

    let page = PageRequest::first(Limit::DEFAULT);
    assert_eq!(f.particles.get(&acme, &p.id).await.unwrap(), None);
    assert!(
        f.particles
            .list(&owner, None, &first(10))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.particles.count(&owner, None).await.unwrap(), 0);
    assert!(
        f.particles
            .versions(&acme, &p.id, &page)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.particles.version(&acme, &p.id, 1).await.unwrap(), None);
    assert_eq!(
        f.particles.version_by_id(&acme, &v2.id).await.unwrap(),
        None
    );
    let v3 = version(&p.id, 3, "after deletion", at(5));
    assert!(!f.particles.add_version(&owner, &v3, &[]).await.unwrap());

    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert!(f.layout(&prompt.id, Some(at(4))).await.is_empty());
    let numbers = |layout: Vec<Resolved>| -> Vec<(u32, u32, Option<u32>, String)> {
        layout
            .into_iter()
            .map(|e| (e.order, e.number, e.pinned, e.name))
            .collect()
    };
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(1))).await),
        vec![(0, 1, None, "role".into()), (1, 1, Some(1), "role".into())]
    );
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(2) + micros(1))).await),
        vec![(0, 2, None, "role".into()), (1, 1, Some(1), "role".into())]
    );
}
